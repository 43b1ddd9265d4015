"""Issue 19 §2: a damaged inventory never removes what runs.

One small site is applied once, its hosts join, and a plan records what every provider
reported (module fixture). Each mode then damages one built-in provider's state in a copy
of that workdir — rows lost per kind, fields garbled, ids swapped, a backup restored, a
file truncated or deleted — while the cluster itself stays as it was. Whatever the
damage, no plan (now, or an hour later, past every join deadline) may drain, delete,
evict, release or reject anything: all of it still exists.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import reconciler.cmds.apply as apply_cli
import reconciler.cmds.map as map_cli
import reconciler.cmds.plan as plan_cli
from reconciler.pipeline import Desired, compile_desired, gather, plan_for, recorded_attempts
from reconciler.state import open_store
from tests.e2e.workspace import SITES, materialize

SITE_YAML = """version: 1
site:
  name: damage
  discovery: report
  join_deadline: 10m
  defaults: {host: {counters: {slots: 8}}}
  safety:
    max_changes: 100
    min_entries: 3
    max_inventory_loss: {default: {fraction: 0.2, count: 2}}
  protected: [volume/shared]
"""
JOINED = "cn[01-04],gn[01-02],burst[01-02]"
HOUR = 3600.0


def _prepare(root: Path) -> tuple[Path, Path]:
    site = materialize(root / "site", SITES / "base")
    (site / "site.yaml").write_text(SITE_YAML)
    workdir = root / "work"
    args = [str(site), "--workdir", str(workdir)]
    assert apply_cli.main([*args, "--auto-approve", "--format", "json"]) == 0
    _backup(_map(workdir), workdir / "damage-backup" / "map.sqlite")  # before the joins
    for event in ("join", "available"):
        assert map_cli.main(["--site", str(site), "--workdir", str(workdir), "report", event,
                             JOINED]) == 0
    assert plan_cli.main([*args, "--format", "json"]) == 0  # in sync; records what it read
    return site, workdir


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> tuple[Desired, Path]:
    site, workdir = _prepare(tmp_path_factory.mktemp("baseline"))
    return compile_desired(site), workdir


# -- the damage ---------------------------------------------------------------------------

def _map(work: Path) -> Path:
    return work / "providers" / "controller" / "map.sqlite"


def _sql(work: Path, *statements: str, bump: bool = True) -> None:
    """Change the controller map's file directly, as a bad restore or a bug would; with
    ``bump`` the generation grows, as if the change were a real one."""
    db = sqlite3.connect(_map(work))
    with db:
        for statement in statements:
            db.execute(statement)
        if bump:
            db.execute("UPDATE meta SET value = value + 1 WHERE key = 'generation'")
    db.close()


def _doc_edit(work: Path, entry_id: str, **fields: object) -> None:
    db = sqlite3.connect(_map(work))
    (doc,) = db.execute("SELECT doc FROM entries WHERE id = ?", (entry_id,)).fetchone()
    db.close()
    changed = {**json.loads(doc), **fields}
    changed = {k: v for k, v in changed.items() if v is not None}
    _sql(work, f"UPDATE entries SET doc = '{json.dumps(changed)}' WHERE id = '{entry_id}'")


def _swap_docs(work: Path, a: str, b: str) -> None:
    db = sqlite3.connect(_map(work))
    docs = dict(db.execute("SELECT id, doc FROM entries WHERE id IN (?, ?)", (a, b)))
    db.close()
    _sql(work, f"UPDATE entries SET doc = '{docs[b]}' WHERE id = '{a}'",
         f"UPDATE entries SET doc = '{docs[a]}' WHERE id = '{b}'")


def _truncate(path: Path) -> None:
    for extra in (Path(f"{path}-wal"), Path(f"{path}-shm")):
        extra.unlink(missing_ok=True)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _sim(work: Path, change: Callable[[dict[str, object]], None]) -> None:
    path = work / "providers" / "cloud" / "state.json"
    state = json.loads(path.read_text())
    change(state)
    state["generation"] = int(state["generation"]) + 1  # type: ignore[call-overload]
    path.write_text(json.dumps(state))


def _sim_entries(state: dict[str, object]) -> dict[str, dict[str, object]]:
    entries = state["entries"]
    assert isinstance(entries, dict)
    return entries


def _renamed(state: dict[str, object], new_id: str, kind: str = "instance") -> None:
    entries = _sim_entries(state)
    entry = entries.pop("instance/burst01")
    entries[new_id] = {**entry, "id": new_id, "kind": kind}


def _backup(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite file (its WAL included), as a backup tool makes one."""
    target.parent.mkdir(parents=True, exist_ok=True)
    src, dst = sqlite3.connect(source), sqlite3.connect(target)
    src.backup(dst)
    src.close()
    dst.close()


def _restore_backup(work: Path) -> None:
    """The map as it was before the hosts joined: read as the present, they never joined,
    and an hour later their instances would be released (a lower generation gives it away)."""
    for extra in ("-wal", "-shm"):
        Path(f"{_map(work)}{extra}").unlink(missing_ok=True)
    shutil.copyfile(work / "damage-backup" / "map.sqlite", _map(work))


def _glob_truncate(work: Path, pattern: str) -> None:
    found = sorted((work / "providers").glob(pattern))
    assert found, pattern
    for path in found:
        _truncate(path)


Damage = Callable[[Path], None]
MODES: dict[str, tuple[Damage, str | None]] = {
    # controller map: rows lost, per kind and in part
    "hosts lost": (lambda w: _sql(w, "DELETE FROM entries WHERE kind = 'host'"), "controller"),
    "half the hosts lost": (lambda w: _sql(
        w, "DELETE FROM entries WHERE id IN ('host/cn01', 'host/cn02', 'host/gn01', "
        "'host/burst01')"), "controller"),
    "counters lost": (lambda w: _sql(w, "DELETE FROM entries WHERE kind = 'counter'"),
                      "controller"),
    "host groups lost": (lambda w: _sql(w, "DELETE FROM entries WHERE kind = 'host-group'"),
                         "controller"),
    "datasets lost": (lambda w: _sql(w, "DELETE FROM entries WHERE kind = 'dataset'"),
                      "controller"),
    "every row lost": (lambda w: _sql(w, "DELETE FROM entries"), "controller"),
    # controller map: fields garbled, ids swapped
    "a host in no lifecycle state": (lambda w: _doc_edit(w, "host/burst01", state="zombie"),
                                     "controller"),
    "a host without a state": (lambda w: _doc_edit(w, "host/cn01", state=None), "controller"),
    "a host document of another id": (lambda w: _doc_edit(w, "host/burst01",
                                                          id="host/burst09"), "controller"),
    "a counter document of kind host": (lambda w: _doc_edit(
        w, "counter/slots@host/cn01", kind="host"), "controller"),
    "two hosts' documents swapped": (lambda w: _swap_docs(w, "host/cn01", "host/burst01"),
                                     "controller"),
    "a row that is not JSON": (lambda w: _sql(
        w, "UPDATE entries SET doc = '{\"id\": \"host/cn0' WHERE id = 'host/cn01'"),
        "controller"),
    "an id with a path in it": (lambda w: _doc_edit(w, "host/cn01", id="host/../cn01"),
                                "controller"),
    # controller map: the file itself
    "a backup from before the joins restored": (_restore_backup, "controller"),
    "the map file truncated": (lambda w: _truncate(_map(w)), "controller"),
    "the map file deleted": (lambda w: [p.unlink() for p in _map(w).parent.glob("map.sqlite*")],
                             "controller"),
    # the cloud account (exec): its state garbled
    "instances lost": (lambda w: _sim(w, lambda s: _sim_entries(s).clear()), "cloud"),
    "an instance in no lifecycle state": (lambda w: _sim(w, lambda s: _sim_entries(s)[
        "instance/burst01"].update(state="zombie")), "cloud"),
    "an instance listed as a host": (lambda w: _sim(w, lambda s: _renamed(
        s, "host/zz999", "host")), "cloud"),
    "an instance id that climbs out": (lambda w: _sim(w, lambda s: _renamed(
        s, "instance/../../etc")), "cloud"),
    "an instance id with a control character": (lambda w: _sim(w, lambda s: _renamed(
        s, "instance/burst\x1b[2J")), "cloud"),
    "the account file truncated": (lambda w: _truncate(w / "providers" / "cloud" /
                                                       "state.json"), "cloud"),
    # the directory and dataset-copy providers: their own state files
    "the directory provider's databases truncated": (
        lambda w: _glob_truncate(w, "shared-fs/*.sqlite"), None),
    "the dataset cache's databases truncated": (
        lambda w: _glob_truncate(w, "gpu-cache/*.sqlite"), None),
}


def _damaged(baseline: tuple[Desired, Path], tmp_path: Path, mode: str) -> Path:
    _, good = baseline
    work = tmp_path / "work"
    shutil.copytree(good, work, symlinks=True)
    MODES[mode][0](work)
    return work


@pytest.mark.parametrize("mode", sorted(MODES))
def test_no_damage_removes_what_still_exists(baseline: tuple[Desired, Path], tmp_path: Path,
                                             mode: str) -> None:
    desired, _ = baseline
    work = _damaged(baseline, tmp_path, mode)
    with open_store(None, work / "state.sqlite") as store:
        live = gather(desired, work, store=store)
        attempts = recorded_attempts(store, desired)
    now = time.time()
    for at in (now, now + HOUR):  # an hour on, every join deadline is past
        plan = plan_for(desired, live, now=at, applied_before=True, attempts=attempts)
        removals = [f"{a.verb} {a.entry}" for a in plan.actions if a.verb.removes]
        assert removals == [], f"{mode}: {removals}"
    suspect = MODES[mode][1]
    if suspect is not None:  # the damaged provider is not trusted: nothing is planned there
        assert suspect in live.supply.unknown, f"{mode}: {live.supply.unknown}"
