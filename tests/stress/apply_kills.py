"""SIGKILLs of ``xce-apply`` (issue 20 §6): series of 2–7 kills in a row, then a run that
finishes — 0 lost, 0 duplicated, 0 stuck; and the same drift, repeated, fixed each time.

This is ``tests/apply/test_apply_crash_repeated.py`` at scale: its kill point
(``kill_at_random``) and its sites (``tests/apply/crashing.py``: the example site of
built-in providers, and an exec provider that runs on after the kill), over SQLite and
PostgreSQL (``XCE_TEST_PG_URL``), for

- ``saved-example``, ``saved-exec``: a saved plan (the test's own two cases);
- ``reviewed``: ``xce-plan --record`` then ``xce-apply --reviewed`` on the example site;
- ``auto-approve``: ``xce-apply --auto-approve`` on the exec site (each run plans anew);
- ``drift``: the exec site applied, then the same user directory removed again and again,
  each time fixed by a killed series of ``--auto-approve`` runs.

After each series: the last run exits 0, no op is left in doubt, ``xce-plan`` has nothing
to do, and (saved plans) the providers' ledgers hold each op of the plan exactly once, or
(fresh plans) each entry was changed once. The short mode is the test itself; this module
runs it at size: ``python -m tests.stress.apply_kills --count 200`` (SIGKILLs).
"""

from __future__ import annotations

import io
import json
import os
import random
import secrets
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path

import psycopg

import reconciler.cmds.plan as plan_cli
from reconciler.state import OpStatus, StateStore
from tests.apply.conftest import Site
from tests.apply.crashing import Crashing, example_site, exec_site, start_apply
from tests.apply.test_apply_crash_repeated import kill_series
from tests.state.targets import PG_ENV, Target, with_options
from tests.stress.common import Figures, main, measured, rng_for

MODES = ["saved-example", "saved-exec", "reviewed", "auto-approve", "drift"]
DRIFTED = "volume-dir/v2/u03"


@contextmanager
def targets(root: Path, label: str, pg: bool = True) -> Iterator[list[Target]]:
    """A fresh SQLite file, and a fresh PostgreSQL schema when a server is given."""
    found = [Target("sqlite", str(root / f"{label}.db"))]
    url = os.environ.get(PG_ENV) if pg else None
    schema = f"xce_stress_{secrets.token_hex(5)}"
    if url:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"CREATE SCHEMA {schema}")
        found.append(Target("postgresql", with_options(url, options=f"-csearch_path={schema}")))
    try:
        yield found
    finally:
        if url:
            with psycopg.connect(url, autocommit=True) as admin:
                admin.execute(f"DROP SCHEMA {schema} CASCADE")


def _quiet_plan(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(out):
        code = plan_cli.main(argv)
    return code, out.getvalue()


def kill_in_run(rng: random.Random, store: StateStore, argv: list[str], log: Path) -> bool:
    """Start an apply that plans anew and SIGKILL it once its run has begun and a random
    number of its ops are done; False when it finished first."""
    seen = {r.run_id for r in store.runs(limit=1000)}
    more = rng.randrange(20) if rng.random() < 0.5 else rng.randrange(60)
    proc = start_apply(argv, log)
    while True:  # until the kill point or the apply's end: events, not a deadline
        new = [r.run_id for r in store.runs(limit=3) if r.run_id not in seen]
        journal = store.journal(run_id=new[0]) if new else []
        done = [e for e in journal if e.status is OpStatus.DONE]
        # a small plan (one drifted entry) is killed before its last op, not let finish
        if journal and len(done) >= min(more, len(journal) - 1):
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
            return True
        if proc.poll() is not None:
            proc.communicate()
            return False
        time.sleep(0.005)


def finish(figures: Figures, name: str, site: Site, argv: list[str], plan_argv: list[str],
           log: Path) -> dict[str, object] | None:
    """The last run after the kills: it must finish, leave nothing in doubt or to do."""
    last = start_apply(argv, log)
    out, _ = last.communicate(timeout=600)
    if last.returncode != 0:
        figures.counts["stuck"] += 1
        figures.fail(name, f"the run after the kills exits {last.returncode}: "
                     f"{log.read_text()[-1500:]}")
        return None
    report: dict[str, object] = json.loads(out)
    with site.store() as store:
        doubt = store.in_doubt("apply/")
    if doubt:
        figures.counts["stuck"] += 1
        figures.fail(name, f"{len(doubt)} ops left in doubt")
    code, text = _quiet_plan(plan_argv)
    if code != 0:
        figures.counts["lost"] += 1
        figures.fail(name, f"xce-plan after the series exits {code}: {text[-1500:]}")
    return report


def saved_series(figures: Figures, name: str, site: Site, crashing: Crashing, kills: int,
                 rng: random.Random) -> None:
    """The test's own series, ``kills`` long; the ledgers hold each op exactly once."""
    digest, ops = crashing.ops()
    log = site.root / "apply.log"
    figures.counts["SIGKILLs"] += kill_series(rng, site, crashing, kills, log)[0]
    if finish(figures, name, site, crashing.argv, crashing.plan_argv, log) is None:
        return
    with site.store() as store:
        statuses = Counter(e.status for e in store.journal(plan_digest=digest))
    if statuses != {OpStatus.DONE: len(ops)}:
        figures.counts["lost"] += 1
        figures.fail(name, f"journal {dict(statuses)} for {len(ops)} ops")
    applied = Counter(crashing.ledger())
    twice = sorted(op for op, n in applied.items() if n > 1)
    missing, extra = ops - set(applied), set(applied) - ops
    figures.counts["duplicated"] += len(twice) + len(extra)
    figures.counts["lost"] += len(missing)
    if twice or missing or extra:
        figures.fail(name, f"{len(twice)} ops twice, {len(missing)} missing, {len(extra)} "
                     "not of the plan")


def fresh_series(figures: Figures, name: str, site: Site, argv: list[str],
                 plan_argv: list[str], kills: int, rng: random.Random) -> None:
    """Runs that plan anew, killed; each entry is changed once (the exec site's log)."""
    log = site.root / "apply.log"
    with site.store() as store:
        for _ in range(kills):
            if not kill_in_run(rng, store, argv, log):
                break
            figures.counts["SIGKILLs"] += 1
    before = Counter(site.executed())
    if finish(figures, name, site, argv, plan_argv, log) is None:
        return
    # only this series' changes: a drift series makes the same entry again on purpose
    done_now = Counter(site.executed()) - before
    twice = sorted(e for e, n in done_now.items() if n > 1)
    if twice:
        figures.counts["duplicated"] += len(twice)
        figures.fail(name, f"changed twice: {twice[:5]}")


def reviewed_site(site: Site) -> Crashing:
    """The example site, its plan recorded for review (the bytes also saved, for its ops)."""
    crashing = example_site(site)
    root = Path(crashing.plan_argv[0])
    code, text = _quiet_plan([*crashing.plan_argv, "--record", "--out", str(crashing.plan_file)])
    assert code == 2, text
    return Crashing([str(root), "--reviewed", "--state", site.target.url], crashing.plan_file,
                    crashing.plan_argv, crashing.ledger)


def drift_series(figures: Figures, name: str, site: Site, kills: int, rng: random.Random,
                 repeats: int) -> None:
    """The exec site applied; then ``DRIFTED`` removed by hand and fixed, ``repeats`` times."""
    crashing = exec_site(site)
    argv = [*site.cli_args("--auto-approve")]
    if finish(figures, name, site, argv, crashing.plan_argv, site.root / "apply.log") is None:
        return
    for round_ in range(repeats):
        state = site.provider_state()
        state["entries"].pop(DRIFTED)
        (site.home / "state.json").write_text(json.dumps(state))
        fresh_series(figures, f"{name} round {round_}", site, argv, crashing.plan_argv,
                     kills, rng)
        if DRIFTED not in site.provider_state()["entries"]:
            figures.counts["drift not fixed"] += 1
            figures.fail(f"{name} round {round_}", f"{DRIFTED} was not made again")
        else:
            figures.counts["drift fixed"] += 1


def series(figures: Figures, mode: str, site: Site, kills: int, rng: random.Random) -> None:
    name = f"{mode} on {site.target.backend}, {kills} kills"
    if mode in ("saved-example", "saved-exec"):
        make: Callable[[Site], Crashing] = example_site if mode == "saved-example" \
            else exec_site
        saved_series(figures, name, site, make(site), kills, rng)
    elif mode == "reviewed":
        saved_series(figures, name, site, reviewed_site(site), kills, rng)
    elif mode == "auto-approve":
        crashing = exec_site(site)
        fresh_series(figures, name, site, site.cli_args("--auto-approve"), crashing.plan_argv,
                     kills, rng)
    else:
        drift_series(figures, name, site, max(1, kills // 3), rng, repeats=2)
    figures.counts[f"series {mode}"] += 1


def run(count: int, seed: int, root: Path, modes: tuple[str, ...] = tuple(MODES),
        pg: bool = True) -> Figures:
    """Series after series, each mode and store in turn, until ``count`` SIGKILLs."""
    figures = Figures("apply-kills", seed)
    with measured(figures):
        i = 0
        while figures.counts["SIGKILLs"] < count and i < 4 * count:  # a series may not kill
            rng = rng_for(seed, "series", i)
            mode, kills = modes[i % len(modes)], rng.randint(2, 7)
            with targets(root, f"s{i}", pg) as found:
                for target in found:
                    folder = root / f"series-{i}-{target.backend}"
                    folder.mkdir()
                    try:
                        with (folder / "output.log").open("w") as shown, \
                                redirect_stdout(shown), redirect_stderr(shown):
                            series(figures, mode, Site(folder, target), kills, rng)
                    except Exception as exc:
                        figures.fail(f"series {i} {mode} on {target.backend}",
                                     f"{type(exc).__name__}: {str(exc)[:800]}")
            i += 1
    return figures


if __name__ == "__main__":
    main(run, 200, __doc__ or "")
