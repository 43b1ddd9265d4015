"""Canaries (issue 20 §6): a unique secret behind every reference of a site, grepped in
every output, file, state-store row, mail and HTTP body — 0 hits.

The site is tests/drift/test_canary.py's: the e2e base site whose cloud provider echoes
its API token (tests/e2e/token_provider.py), here with every kind of reference a site
has — the provider's credential (``env:``), a secret provider param (``file:``) and the
SMTP password of ``xce-drift --notify`` (``env:``) — each resolving to a fresh canary per
round. A round runs, in-process, ``xce-compile`` and ``xce-plan`` in every format (and
``--out``, ``--show``), ``xce-apply --auto-approve``, ``xce-drift`` in every format with
``--out`` and ``--notify`` (a real SMTP server over TLS, tests/drift/mailserver.py) and
``xce-pr comment`` of the plan (the forge double, tests/pr/api_double.py), on SQLite and
PostgreSQL; then looks for each canary in all of it. The file that holds the ``file:``
secret is the one place it may be.

``python -m tests.stress.canaries --count 10`` (rounds).
"""

from __future__ import annotations

import io
import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

import compiler.cmds.compile as compile_cli
import reconciler.cmds.apply as apply_cli
import reconciler.cmds.drift as drift_cli
import reconciler.cmds.plan as plan_cli
from reconciler.cmds import pr as pr_cli
from reconciler.render.drift import FORMATS as DRIFT_FORMATS
from tests.drift.mailserver import USER, Inbox, make_certificate, smtp_server
from tests.drift.world import make_site
from tests.e2e.steps import run_steps
from tests.e2e.workspace import Workspace, planning
from tests.pr.api_double import ForgeDouble
from tests.state.targets import Target
from tests.stress.apply_kills import targets
from tests.stress.common import Figures, main, measured

PLAN_FORMATS = ("text", "json", "markdown", "github")
Shown = dict[str, bytes]


def canaries() -> dict[str, str]:
    return {ref: f"canary-{ref}-{secrets.token_hex(8)}" for ref in ("api", "param", "smtp")}


def secret_site(root: Path, canary: dict[str, str], port: int, ca: Path) -> Workspace:
    """The canary site: the echoing cloud provider with a ``file:`` param, drift mail."""
    ws = make_site(root, "secret_site")
    held = root / "secrets" / "db"
    held.parent.mkdir()
    held.write_text(canary["param"] + "\n")
    providers = ws.site / "providers.yaml"
    providers.write_text(providers.read_text().replace(
        "      api_token: env:XCE_TEST_TOKEN\n",
        f"      api_token: env:XCE_TEST_TOKEN\n    params: {{db_password: file:{held}}}\n"))
    with (ws.site / "site.yaml").open("a") as fh:
        fh.write(f"""drift:
  notify:
    smtp: {{host: 127.0.0.1, port: {port}, tls: implicit, user: {USER},
           password: env:XCE_SMTP_PASSWORD, ca_file: {ca}, timeout: 10s}}
    from: drift@example.org
    to: [admins@example.org]
    digest: never
""")
    ws.env.update({"XCE_TEST_TOKEN": canary["api"], "XCE_SMTP_PASSWORD": canary["smtp"],
                   "XCE_CRASH_DIR": str(root / "crashes")})
    return ws


def _run(shown: Shown, label: str, ws: Workspace, main_fn: Callable[[list[str]], int],
         argv: list[str]) -> int:
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, planning(ws, mp), redirect_stdout(out), \
            redirect_stderr(err):
        code = main_fn(argv)
    shown[f"{label} stdout"] = out.getvalue().encode()
    shown[f"{label} stderr"] = err.getvalue().encode()
    return code


def commands(shown: Shown, ws: Workspace, target: Target, out: Path) -> None:
    """Every command of the product that reads the site, in every format."""
    site, common = str(ws.site), ["--workdir", str(ws.workdir), "--state", target.url]
    for fmt in PLAN_FORMATS:
        _run(shown, f"xce-compile {fmt}", ws, compile_cli.main,
             [site, "--out", str(out / f"build-{fmt}"), "--format", fmt])
        _run(shown, f"xce-plan {fmt}", ws, plan_cli.main,
             [site, *common, "--format", fmt, "--out", str(out / f"plan-{fmt}.json")])
        _run(shown, f"xce-plan --show {fmt}", ws, plan_cli.main,
             ["--show", str(out / "plan-json.json"), "--format", fmt])
    (out / "plan.md").write_bytes(shown["xce-plan markdown stdout"])
    for fmt in ("text", "json"):
        _run(shown, f"xce-apply {fmt}", ws, apply_cli.main,
             [site, "--auto-approve", *common, "--format", fmt])
    for fmt in DRIFT_FORMATS.names:
        _run(shown, f"xce-drift {fmt}", ws, drift_cli.main,
             [site, *common, "--format", fmt, "--out", str(out / f"drift-{fmt}.out")])
    _run(shown, "xce-drift --notify", ws, drift_cli.main, [site, *common, "--notify"])


@contextmanager
def forge(ws: Workspace) -> Iterator[ForgeDouble]:
    with ForgeDouble() as api:
        ws.env.update({"GITHUB_ACTIONS": "true", "GITHUB_API_URL": api.github_url,
                       "GITHUB_TOKEN": api.token, "GITHUB_REPOSITORY": "octo/site-config"})
        try:
            yield api
        finally:
            for name in ("GITHUB_ACTIONS", "GITHUB_API_URL", "GITHUB_TOKEN",
                         "GITHUB_REPOSITORY"):
                ws.env.pop(name, None)


def rows(target: Target) -> Shown:
    """Every row of every table of the store, as text."""
    if target.backend == "sqlite":
        tables = [r[0] for r in target.raw("SELECT name FROM sqlite_master WHERE type='table'")]
    else:
        tables = [r[0] for r in target.raw(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = "
            "current_schema()")]
    return {f"{target.backend} table {t}": repr(target.raw(f'SELECT * FROM "{t}"')).encode()
            for t in tables}


def files(root: Path, allowed: Path) -> Shown:
    """Every regular file under ``root`` but the one that holds the ``file:`` secret."""
    return {f"file {p.relative_to(root)}": p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.is_symlink() and p != allowed}


def one_round(figures: Figures, root: Path, i: int, pg: bool = True) -> None:
    canary = canaries()
    tls = make_certificate(root)
    inbox = Inbox(canary["smtp"])
    with smtp_server(inbox, "implicit", tls) as port:
        ws = secret_site(root / "round", canary, port, tls.cert)
        with pytest.MonkeyPatch.context() as mp:
            run_steps(ws, [{"apply_site": True}], mp)
        shown: Shown = {}
        with targets(root, f"canary-{i}", pg) as found:
            for target in found:
                out = root / f"out-{target.backend}"
                out.mkdir()
                commands(shown, ws, target, out)
                shown.update(rows(target))
            with forge(ws) as api:
                os.chdir(root)
                code = _run(shown, "xce-pr comment", ws, pr_cli.main,
                            ["comment", str(root / "out-sqlite" / "plan.md"), "--pr", "5"])
                shown.update({f"HTTP {r.method} {r.path}": repr((r.headers, r.body)).encode()
                              for r in api.log})
                figures.counts["HTTP requests"] += len(api.log)
                if code != 0 or not api.log:
                    figures.fail(f"round {i}", "xce-pr comment posted nothing: " +
                                 shown["xce-pr comment stderr"].decode()[-400:])
    shown.update({f"mail {n}": m.raw for n, m in enumerate(inbox.received)})
    figures.counts["mails"] += len(inbox.received)
    if not inbox.received:
        figures.fail(f"round {i}", "xce-drift --notify sent no mail: "
                     + shown["xce-drift --notify stderr"].decode()[-400:])
    shown.update(files(root, root / "round" / "secrets" / "db"))
    grep(figures, f"round {i}", shown, canary)


def grep(figures: Figures, name: str, shown: Shown, canary: dict[str, str]) -> None:
    figures.counts["places grepped"] += len(shown)
    figures.counts["bytes grepped"] += sum(len(v) for v in shown.values())
    for where, data in shown.items():
        for ref, value in canary.items():
            if value.encode() in data:
                figures.counts["hits"] += 1
                figures.fail(name, f"the {ref} canary is in the {where}")


def run(count: int, seed: int, root: Path, pg: bool = True) -> Figures:
    """``count`` rounds, each with fresh canaries (the seed only names the run)."""
    figures = Figures("canaries", seed)
    here = Path.cwd()
    with measured(figures):
        for i in range(count):
            folder = root / f"round-{i}"
            folder.mkdir()
            try:
                one_round(figures, folder, i, pg)
                figures.counts["rounds"] += 1
            except Exception as exc:
                figures.fail(f"round {i}", f"{type(exc).__name__}: {str(exc)[:800]}")
            finally:
                os.chdir(here)
    return figures


if __name__ == "__main__":
    main(run, 10, __doc__ or "")
