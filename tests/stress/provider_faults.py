"""Provider fault matrix (issue 20 §6): a site applied and in step, then one provider fails
in one way — 0 wrongful removals.

The world is the e2e base site (tests/drift/world.py's ``make_site``), applied and its
hosts joined: nothing is left to do, so any removing verb (drain, delete, evict, release,
reject) that a plan or an apply produces under a fault is a wrongful one. Each case copies
the world, primes the state store with a plan in step (the generations it remembers),
applies its fault, then runs ``xce-plan --destroy`` and ``xce-apply --auto-approve
--allow-destroy`` in-process. Faults:

- the cloud account (an exec provider) behind ``fault_proxy.py``, over exec and over JSON
  lines: crashes, partial, lying, damaged, slow and endless replies, foreign ids, a
  generation that went down (a rollback), a new session (the settle window);
- each built-in provider damaged on disk: the volume gone, emptied or swapped for a link,
  the cache and its copies damaged, the controller map wiped, corrupt, or rolled back,
  ledgers corrupt, hosts lost or drained by hand, foreign entries;
- pairs of the above, chosen by the seed, when the run asks for more cases than singles.

``python -m tests.stress.provider_faults --count 300``.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sqlite3
import sys
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

import reconciler.cmds.apply as apply_cli
import reconciler.cmds.plan as plan_cli
from reconciler.plan.model import Verb
from tests.drift.world import APPLIED, drain_by_hand, make_site
from tests.e2e.steps import corrupt_map, foreign_entry, report, run_steps, wipe_map
from tests.e2e.workspace import Workspace, planning
from tests.stress.common import Figures, main, measured, rng_for
from tests.stress.fault_proxy import FAULTS

PROXY = Path(__file__).with_name("fault_proxy.py")
SIM = f"{sys.executable}, -m, reconciler.testdoubles.sim_provider"  # YAML list items
REMOVING = frozenset(v.value for v in Verb if v.removes)
CLOUD = "    command: [python3, -m, reconciler.testdoubles.sim_provider, cloud]\n"
Fault = Callable[[Workspace, Callable[[], None]], None]


def build_world(root: Path) -> Workspace:
    ws = make_site(root / "world")
    with pytest.MonkeyPatch.context() as mp:
        run_steps(ws, list(APPLIED), mp)  # type: ignore[arg-type]
    return ws


def copy_world(world: Workspace, case: Path) -> Workspace:
    if case.exists():
        shutil.rmtree(case)
    shutil.copytree(world.site.parent, case, symlinks=True)
    return Workspace(case / world.site.name, case / world.workdir.name, epoch=world.epoch)


# --- the cloud account behind the fault proxy ---------------------------------------------

def proxied(mode: str, transport: str) -> Fault:
    def fault(ws: Workspace, prime: Callable[[], None]) -> None:
        providers = ws.site / "providers.yaml"
        text = providers.read_text()
        assert CLOUD in text, "the base site's cloud provider moved"
        extra = ", --jsonl" if transport == "jsonl" else ""
        command = (f"    command: [{sys.executable}, {PROXY}, {mode}{extra}, --, {SIM}, cloud]\n"
                   f"    timeout: 3s\n")
        text = text.replace(CLOUD, command).replace("kind: exec\n    description: the cloud",
                                                    f"kind: {transport}\n    description: "
                                                    "the cloud")
        providers.write_text(text.replace("    timeout: 20s\n", ""))
    return fault


# --- built-in providers damaged on disk ---------------------------------------------------

def _rm(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _empty(path: Path) -> None:
    for child in path.iterdir():
        _rm(child)


def _to_link(path: Path) -> None:
    elsewhere = path.with_name(path.name + ".elsewhere")
    elsewhere.mkdir()
    _rm(path)
    path.symlink_to(elsewhere)


def _to_file(path: Path) -> None:
    _rm(path)
    path.write_text("not a folder\n")


def _corrupt(path: Path) -> None:
    with path.open("r+b") as fh:
        fh.write(b"\0" * 16)


def _truncate(path: Path) -> None:
    path.write_bytes(b"")


def _fifo(folder: Path) -> None:
    victim = next(p for p in sorted(folder.rglob("*")) if p.is_file())
    victim.chmod(0o644)
    victim.unlink()
    os.mkfifo(victim)


def _append(folder: Path) -> None:
    victim = next(p for p in sorted(folder.rglob("*")) if p.is_file())
    victim.chmod(0o644)
    with victim.open("ab") as fh:
        fh.write(b"!")


def on_disk(rel: str, change: Callable[[Path], None]) -> Fault:
    return lambda ws, prime: change(ws.workdir / rel)


def _map_rollback(ws: Workspace, prime: Callable[[], None]) -> None:
    """The controller map restored from a backup older than the last plan."""
    db = ws.workdir / "providers" / "controller" / "map.sqlite"
    backup = db.with_name("backup.sqlite")
    with sqlite3.connect(db) as conn, sqlite3.connect(backup) as copy:
        conn.backup(copy)
    for event in ("lost", "join", "available"):  # the map moves on past the backup
        report(ws, [event, "cn03"])
    prime()
    backup.replace(db)
    for suffix in ("-wal", "-shm"):
        _rm(db.with_name(db.name + suffix))


def _foreign(provider: str, entry: dict[str, Any]) -> Fault:
    return lambda ws, prime: foreign_entry(ws, {"provider": provider, "owner": "site/west",
                                                "entry": entry})


def _drained_by_hand(host: str) -> Fault:
    """Drained by an admin (``scontrol drain``), and the node manager reports it drained."""
    def fault(ws: Workspace, prime: Callable[[], None]) -> None:
        drain_by_hand(ws, host)
        report(ws, ["drained", host])
    return fault


def _report(*event: Any) -> Fault:
    return lambda ws, prime: report(ws, list(event))


BUILTIN: dict[str, Fault] = {
    "directory/volume-removed": on_disk("fs/shared", _rm),
    "directory/volume-emptied": on_disk("fs/shared", _empty),
    "directory/volume-link": on_disk("fs/shared", _to_link),
    "directory/volume-file": on_disk("fs/shared", _to_file),
    "directory/user-link": on_disk("fs/shared/alice", _to_link),
    "directory/user-file": on_disk("fs/shared/alice", _to_file),
    "directory/user-removed": on_disk("fs/shared/bob", _rm),
    "directory/foreign-folder": on_disk("fs/shared/zed", lambda p: p.mkdir()),
    "directory/fs-removed": on_disk("fs", _rm),
    "directory/ledger-corrupt": on_disk("providers/shared-fs/opledger.sqlite", _corrupt),
    "directory/ledger-truncated": on_disk("providers/shared-fs/opledger.sqlite", _truncate),
    "directory/state-removed": on_disk("providers/shared-fs", _rm),
    "directory/foreign-entry": _foreign("shared-fs", {"id": "volume-dir/shared/mallory"}),
    "dataset-copy/cache-removed": on_disk("caches/gpu", _rm),
    "dataset-copy/cache-emptied": on_disk("caches/gpu", _empty),
    "dataset-copy/cache-link": on_disk("caches/gpu", _to_link),
    "dataset-copy/copy-corrupt": on_disk("caches/gpu", _append),
    "dataset-copy/copy-fifo": on_disk("caches/gpu", _fifo),
    "dataset-copy/ledger-corrupt": on_disk("providers/gpu-cache/opledger.sqlite", _corrupt),
    "dataset-copy/state-removed": on_disk("providers/gpu-cache", _rm),
    "controller-map/wiped": lambda ws, prime: wipe_map(ws, "controller"),
    "controller-map/corrupt": lambda ws, prime: corrupt_map(ws, "controller"),
    "controller-map/truncated": on_disk("providers/controller/map.sqlite", _truncate),
    "controller-map/removed": on_disk("providers/controller", _rm),
    "controller-map/rollback": _map_rollback,
    "controller-map/host-lost": _report("lost", "cn01"),
    "controller-map/host-lost-long-ago": _report("lost", "cn01", -7200),
    "controller-map/hosts-lost": _report("lost", "cn[01-04],gn[01-02]"),
    "controller-map/host-drained": _drained_by_hand("cn02"),
    "controller-map/host-unknown-joined": _report("join", "zz99"),
    "controller-map/foreign-license": _foreign("controller", {
        "id": "license/ansys@site", "kind": "license", "state": "available",
        "source": "config", "amount": 2}),
    "controller-map/drained-by-hand": lambda ws, prime: drain_by_hand(ws, "cn02"),
}


def singles() -> dict[str, Fault]:
    out = {f"{t}/{mode}": proxied(mode, t) for mode in FAULTS for t in ("exec", "jsonl")}
    return {**out, **BUILTIN}


# --- one case ------------------------------------------------------------------------------

def _quiet(main_fn: Callable[[list[str]], int], ws: Workspace, *args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, planning(ws, mp), redirect_stdout(out), \
            redirect_stderr(err):
        code = main_fn([str(ws.site), "--workdir", str(ws.workdir), *args])
    return code, out.getvalue() + "\n--stderr--\n" + err.getvalue()


def removals(text: str) -> list[str]:
    """The removing actions of a plan or apply report (JSON on the first part of ``text``)."""
    try:
        doc = json.loads(text.split("\n--stderr--\n")[0])
    except ValueError:
        return []
    if not isinstance(doc, dict):
        return []
    return [f"{a['action']} {a['entry']}" for a in doc.get("actions") or []
            if a.get("action") in REMOVING and a.get("status", "done") != "skipped"]


def run_case(figures: Figures, world: Workspace, root: Path, name: str,
             faults: list[Fault]) -> None:
    ws = copy_world(world, root / "case")
    state = str(ws.workdir / "state.sqlite")

    def prime() -> None:
        code, text = _quiet(plan_cli.main, ws, "--state", state, "--format", "json")
        assert code == 0, f"{name}: the world is not in step before the fault:\n{text[-2000:]}"

    prime()
    with pytest.MonkeyPatch.context() as mp, planning(ws, mp):
        for fault in faults:
            fault(ws, prime)
    code, text = _quiet(plan_cli.main, ws, "--destroy", "--state", state, "--format", "json")
    figures.counts[f"plan exit {code}"] += 1
    check(figures, name, "xce-plan --destroy", code, text)
    code, text = _quiet(apply_cli.main, ws, "--auto-approve", "--allow-destroy", "--state",
                        state, "--format", "json", "--retry-delay", "0.01")
    figures.counts[f"apply exit {code}"] += 1
    check(figures, name, "xce-apply --auto-approve --allow-destroy", code, text)
    figures.counts["modes"] += 1


def check(figures: Figures, name: str, what: str, code: int, text: str) -> None:
    wrongful = removals(text)
    if wrongful:
        figures.counts["wrongful removals"] += len(wrongful)
        figures.fail(name, f"{what} removes: {', '.join(wrongful[:8])}")
    if "XCE900" in text or "Traceback" in text:
        figures.counts["internal errors"] += 1
        figures.fail(name, f"{what} crashed: {text[-500:]}")
    if code not in (0, 1, 2):
        figures.fail(name, f"{what} exit {code}")


def chosen(count: int, seed: int) -> list[tuple[str, list[Fault]]]:
    """Every single fault (evenly thinned when ``count`` is smaller), then seeded pairs."""
    table = singles()
    names = sorted(table)
    if count < len(names):
        step = len(names) / count
        names = [names[int(i * step)] for i in range(count)]
    cases = [(n, [table[n]]) for n in names]
    builtin, proxy = sorted(BUILTIN), [n for n in sorted(table) if n not in BUILTIN]
    for i in range(count - len(cases)):
        rng = rng_for(seed, "pair", i)
        first, second = rng.choice(proxy), rng.choice(builtin)
        # the built-in fault first: a rollback plans (to record the newer generation) while
        # the world is still in step, which it is not once the cloud is faulty
        cases.append((f"{first} + {second}", [table[second], table[first]]))
    return cases


def run(count: int, seed: int, root: Path) -> Figures:
    figures = Figures("provider-faults", seed)
    with measured(figures):
        world = build_world(root)
        for name, faults in chosen(count, seed):
            try:
                run_case(figures, world, root, name, faults)
            except Exception as exc:
                figures.fail(name, f"{type(exc).__name__}: {str(exc)[:800]}")
    return figures


if __name__ == "__main__":
    main(run, 300, __doc__ or "")
