"""Destructive actions need permission, protected entries are never destroyed, and an apply
whose epoch is older than one a provider has seen is fenced off."""

from __future__ import annotations

from dataclasses import replace

import pytest

from compiler.contract.supply_map import Entry
from reconciler.apply import FreshPlan, Status
from reconciler.apply.ops import plan_digest
from reconciler.cmds import apply as apply_cli
from reconciler.state import OpStatus, RunStatus
from tests.apply.conftest import OWNER, Site, pool, volume, volume_site

COUNTER = "counter/slots@pool/old"


def _counter() -> Entry:
    return Entry(COUNTER, "counter", "available", "config", "slow", location="pool/old",
                 amount=64, owner=OWNER)


def _site_with_leftovers(site: Site, protected: tuple[str, ...] = ()) -> None:
    """Config wants one volume; the provider still holds a pool (with a counter) and another."""
    site.write([volume("v1")], protected=protected)
    site.seed([pool("old"), _counter(), pool("spare")])


def test_without_permission_destructive_actions_are_skipped_with_a_hint(site: Site) -> None:
    _site_with_leftovers(site)
    report = site.apply(FreshPlan())
    by_entry = {o.action.entry: o for o in report.outcomes}
    assert by_entry["volume/v1"].status is Status.DONE
    for entry in ("storage-pool/old", COUNTER, "storage-pool/spare"):
        skipped = by_entry[entry]
        assert (skipped.status, skipped.code) == (Status.SKIPPED, "XCE830"), skipped
        assert "--allow-destroy" in skipped.hint
    assert by_entry[COUNTER].message == "'delete' is destructive and this apply has no " \
        "destroy permission"
    assert report.exit_code == 0  # nothing failed
    assert site.executed() == ["volume/v1"]
    with site.store() as store:
        skipped_rows = [e for e in store.journal(run_id=report.run_id or "")
                        if e.status is OpStatus.SKIPPED]
        assert len(skipped_rows) == 3 and all(e.error and e.error.startswith("XCE830")
                                              for e in skipped_rows)
        assert store.get_applied("test") is None  # not everything was applied


def test_protected_entries_and_their_dependents_are_never_destroyed(site: Site) -> None:
    _site_with_leftovers(site, protected=(COUNTER,))
    report = site.apply(FreshPlan(), allow_destroy=True)
    by_entry = {o.action.entry: o for o in report.outcomes}
    counter = by_entry[COUNTER]
    assert (counter.status, counter.code) == (Status.SKIPPED, "XCE831")
    assert "protected" in counter.message and "site.protected" in counter.hint
    # the pool goes only after its counter: skipped for the same reason, naming it
    parent = by_entry["storage-pool/old"]
    assert (parent.status, parent.code, parent.hint) == (Status.SKIPPED, "XCE831", counter.hint)
    assert parent.message.startswith(f"depends on delete:{COUNTER}, which was skipped: ")
    assert by_entry["storage-pool/spare"].status is Status.DONE
    assert report.exit_code == 0
    assert sorted(site.executed()) == ["storage-pool/spare", "volume/v1"]


def test_a_destroying_verb_is_gated_whatever_the_plan_file_says(site: Site) -> None:
    """A plan file is checked for integrity, not authorship: its ``destructive`` flag alone
    does not decide."""
    _site_with_leftovers(site)
    plan = site.plan()
    unflagged = replace(plan, actions=tuple(replace(a, destructive=False) for a in plan.actions))
    report = site.apply(unflagged)
    assert {o.action.entry: o.code for o in report.outcomes if o.status is Status.SKIPPED} == {
        "storage-pool/old": "XCE830", COUNTER: "XCE830", "storage-pool/spare": "XCE830"}
    assert site.executed() == ["volume/v1"]


def test_a_plan_saved_with_destroy_permission_destroys(site: Site) -> None:
    _site_with_leftovers(site)
    report = site.apply(site.plan(destroy=True), destroy=True)
    assert report.counts() == {"done": 4, "already-done": 0, "failed": 0, "skipped": 0}
    assert set(site.provider_state()["entries"]) == {"volume/v1"}


def test_allow_destroy_finishes_a_plan_saved_without_permission(
        site: Site, capsys: pytest.CaptureFixture[str]) -> None:
    _site_with_leftovers(site)
    plan_file = site.save(site.plan())
    assert apply_cli.main(site.cli_args(str(plan_file))) == 0
    out = capsys.readouterr().out
    assert "Skipped (2):" in out and "XCE830" in out  # and what waits on them, in one line
    assert "1 action not run because" in out and "was skipped (XCE830)" in out
    assert set(site.provider_state()["entries"]) == {"volume/v1", "storage-pool/old",
                                                     COUNTER, "storage-pool/spare"}
    assert apply_cli.main(site.cli_args(str(plan_file), "--allow-destroy")) == 0
    assert "3 done, 1 already done, 0 failed, 0 skipped" in capsys.readouterr().out
    assert set(site.provider_state()["entries"]) == {"volume/v1"}


def test_an_older_epoch_is_refused_and_stops_the_apply(site: Site) -> None:
    site.write(volume_site(volumes=3, users=1))
    plan = site.plan()
    site.seed([], epoch=100)  # a newer applier (or a proxy that moved on) has been here
    report = site.apply(plan, parallelism=1)
    assert report.epoch == 1
    assert report.stopped is not None and report.stopped.code == "XCE836"
    assert "refused epoch 1" in report.stopped.message
    fenced = [o for o in report.outcomes if o.status is Status.FAILED]
    assert [(o.code, o.error) for o in fenced] == [("XCE836", "ABORTED")]
    rest = [o for o in report.outcomes if o.status is Status.SKIPPED]
    # its dependent is skipped for it; all else was not started because the apply stopped
    assert len(rest) == len(plan.actions) - 1
    assert {o.code for o in rest} == {"XCE832", "XCE833"}
    assert report.exit_code == 1
    assert site.executed() == []
    with site.store() as store:
        assert store.get_run(report.run_id or "").status is RunStatus.INTERRUPTED  # type: ignore[union-attr]
        rows = {e.op_id: e.status for e in store.journal(plan_digest=plan_digest(plan))}
        # nothing after the fence is written as skipped: the newer runner owns those ops;
        # the fenced op stays in doubt, and the ops never sent are dropped with the run
        assert rows == {fenced[0].op_id: OpStatus.RUNNING}


def test_each_run_brings_a_newer_epoch_to_the_provider(site: Site) -> None:
    site.write(volume_site(volumes=1, users=0))
    site.apply(site.plan())
    site.write(volume_site(volumes=2, users=0))
    report = site.apply(site.plan())
    assert report.epoch == 2 and site.provider_state()["epoch"] == 2
