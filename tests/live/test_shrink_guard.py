"""Issue 19 §2: an inventory that lost a large part of what it reported at the last trusted
read is not trusted, unless applies removed it (the journal) or an admin accepts the loss
(``xce-plan --accept-shrink``, kept in the saved plan and recorded by its apply)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import reconciler.cmds.apply as apply_cli
import reconciler.cmds.plan as plan_cli
from compiler.contract.supply_map import Entry, SupplyMap
from reconciler.live import distrust_shrinks, kind_counts
from reconciler.plan.file import load_plan
from reconciler.state import OpStatus, PlannedOp, StateStore, open_store
from reconciler.state.runs import lock_name, run_prefix, site_runs
from tests.live.test_damage_matrix import _map, _prepare, _sql

SITE = "s1"
LIMIT = (0.2, 2)


def _live(hosts: int, provider: str = "ctl") -> SupplyMap:
    entries = {f"host/h{i:03d}": Entry(f"host/h{i:03d}", "host", "available", "config",
                                       provider) for i in range(hosts)}
    return SupplyMap(entries, generations={provider: 5})


@pytest.fixture
def store(tmp_path: Path) -> StateStore:
    return open_store(None, tmp_path / "state.sqlite")


def _removed_by_an_apply(store: StateStore, ids: list[str], action: str = "release") -> None:
    run = f"{site_runs(SITE)}20260101T000000Z-1"
    store.start_run(run, "sha256:plan", "tester")
    ops = [PlannedOp(f"op-{i}", action, e, "ctl") for i, e in enumerate(ids)]
    store.journal_add(run, ops)
    for op in ops:
        store.journal_start(run, op)
        store.journal_finish(run, op.op_id, OpStatus.DONE)


def test_the_run_ids_the_guard_reads_are_the_applys() -> None:
    assert site_runs(SITE) == run_prefix(lock_name(SITE))


def test_a_loss_beyond_the_limit_is_not_trusted(store: StateStore) -> None:
    store.record_inventory_counts(SITE, kind_counts(_live(20)))
    checked = distrust_shrinks(_live(15), store, SITE, lambda _: LIMIT)
    assert checked.live.entries == {} and "ctl" in checked.live.unknown
    [problem] = checked.problems
    assert problem.code == "XCE716" and problem.subject == "ctl"
    assert "15 host entries, 5 fewer than before" in problem.message  # how many, since when
    assert "since 20" in problem.message


@pytest.mark.parametrize(("now", "trusted"), [(17, True), (18, True), (16, False)])
def test_a_small_loss_is_trusted(store: StateStore, now: int, trusted: bool) -> None:
    """15 % of 20 is 3: losing 2 or 3 is within the limit, losing 4 is not."""
    store.record_inventory_counts(SITE, kind_counts(_live(20)))
    checked = distrust_shrinks(_live(now), store, SITE, lambda _: (0.15, 2))
    assert ("ctl" not in checked.live.unknown) is trusted


def test_what_applies_removed_since_is_no_loss(store: StateStore) -> None:
    for site in (SITE, "s2"):
        store.record_inventory_counts(site, kind_counts(_live(20)))
    _removed_by_an_apply(store, [f"host/h{i:03d}" for i in range(15, 20)])
    assert "ctl" not in distrust_shrinks(_live(15), store, SITE, lambda _: LIMIT).live.unknown
    # another site's removals explain nothing
    assert "ctl" in distrust_shrinks(_live(15), store, "s2", lambda _: LIMIT).live.unknown


def test_a_drain_explains_no_loss(store: StateStore) -> None:
    store.record_inventory_counts(SITE, kind_counts(_live(20)))
    _removed_by_an_apply(store, [f"host/h{i:03d}" for i in range(15, 20)], action="drain")
    assert "ctl" in distrust_shrinks(_live(15), store, SITE, lambda _: LIMIT).live.unknown


def test_jobs_and_job_directories_come_and_go(store: StateStore) -> None:
    many = {f"job/{i}": Entry(f"job/{i}", "job", "finished", "reporter", "ctl")
            for i in range(50)}
    store.record_inventory_counts(SITE, kind_counts(SupplyMap(many, generations={"ctl": 1})))
    assert store.inventory_counts(SITE) == {}  # not counted at all
    gone = distrust_shrinks(SupplyMap({}, generations={"ctl": 2}), store, SITE, lambda _: LIMIT)
    assert gone.live.unknown == {}


def test_an_accepted_shrink_is_kept_in_the_plan_and_recorded_by_its_apply(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's case, on a small site: the map loses its host rows (a bad restore) and
    its generation goes up. The plan trusts nothing of the controller; an admin who knows
    the loss is real accepts it, the saved plan says so, and its apply records the counts."""
    site, work = _prepare(tmp_path)
    args = [str(site), "--workdir", str(work)]
    _sql(work, "DELETE FROM entries WHERE kind = 'host' AND id LIKE 'host/cn%'")
    capsys.readouterr()
    assert plan_cli.main([*args, "--format", "json"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out)["actions"] == [] and "XCE716" in err
    assert "4 fewer than before" in err

    plan_file = tmp_path / "plan.json"
    assert plan_cli.main([*args, "--accept-shrink", "controller", "--out", str(plan_file)]) == 2
    saved = load_plan(plan_file).plan
    assert saved.accepted_shrink == ("controller",)
    assert {a.entry for a in saved.actions} >= {"host/cn01", "host/cn04"}  # recreated
    assert not any(a.verb.removes for a in saved.actions)
    assert plan_cli.main([*args, "--format", "json"]) == 1  # the plan only proposed it
    assert "XCE716" in capsys.readouterr().err
    assert apply_cli.main([str(plan_file), "--format", "json"]) == 0
    capsys.readouterr()
    code = plan_cli.main([*args, "--format", "json"])
    assert "XCE716" not in capsys.readouterr().err
    assert code in (0, 2)


def test_accepting_a_provider_that_did_not_report_is_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site, work = _prepare(tmp_path)
    for path in _map(work).parent.glob("map.sqlite*"):
        path.write_bytes(b"not a database")
    db = None
    with pytest.raises(sqlite3.DatabaseError):
        db = sqlite3.connect(_map(work))
        db.execute("SELECT 1 FROM entries")
    if db is not None:
        db.close()
    capsys.readouterr()
    assert plan_cli.main([str(site), "--workdir", str(work), "--accept-shrink",
                          "controller"]) == 1
    assert "XCE717" in capsys.readouterr().err
