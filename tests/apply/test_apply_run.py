"""A plan runs in dependency order, in parallel within a bound, retrying what may succeed."""

from __future__ import annotations

from collections import Counter

from reconciler.apply import Status
from reconciler.apply.ops import plan_digest
from reconciler.state import OpStatus, RunStatus
from tests.apply.conftest import Site, volume_site


def test_applies_everything_once_then_nothing_is_left(site: Site) -> None:
    site.write(volume_site(volumes=2, users=3))
    plan = site.plan()
    assert len(plan.actions) == 8
    report = site.apply(plan)
    assert (report.result, report.exit_code) == ("applied", 0)
    assert report.counts() == {"done": 8, "already-done": 0, "failed": 0, "skipped": 0}
    assert sorted(site.executed()) == sorted(a.entry for a in plan.actions)
    # each directory was created after its volume
    order = site.executed()
    for entry in order:
        if entry.startswith("volume-dir/"):
            vol = "volume/" + entry.split("/")[1]
            assert order.index(vol) < order.index(entry)
    with site.store() as store:
        journal = store.journal(plan_digest=plan_digest(plan))
        assert {e.status for e in journal} == {OpStatus.DONE}
        assert {e.op_id for e in journal} == {o.op_id for o in report.outcomes}
        assert store.get_run(report.run_id or "").status is RunStatus.SUCCEEDED  # type: ignore[union-attr]
        applied = store.get_applied("test")
        assert applied is not None and applied.digest == site.desired().digest
        assert store.list_locks() == []  # released
    assert site.plan().actions == ()


def test_same_plan_again_is_already_done_and_calls_nothing(site: Site) -> None:
    site.write(volume_site(volumes=1, users=2))
    plan = site.plan()
    site.apply(plan)
    calls = len(site.calls())
    again = site.apply(plan)
    assert again.counts()["already-done"] == 3 and again.exit_code == 0
    assert len(site.calls()) == calls
    assert again.epoch is not None and again.epoch == 2


def test_parallel_calls_are_bounded_per_provider(site: Site) -> None:
    site.write(volume_site(volumes=6, users=0), delay=0.3)
    report = site.apply(site.plan(), parallelism=2)
    assert report.counts()["done"] == 6
    with site.store() as store:
        journal = store.journal(run_id=report.run_id or "")
    # the most calls in flight at once, from the journal's start and finish times
    edges = sorted([(e.started, 1) for e in journal] + [(e.finished, -1) for e in journal],
                   key=lambda edge: (edge[0], edge[1]))
    in_flight = [sum(step for _, step in edges[: i + 1]) for i in range(len(edges))]
    assert max(in_flight) == 2  # calls overlapped, never more than the bound


def test_unavailable_is_retried_with_backoff(site: Site) -> None:
    site.write(volume_site(volumes=1, users=1))
    site.fault("volume/v1", "UNAVAILABLE", 2)
    report = site.apply(site.plan())
    assert report.exit_code == 0
    first = next(o for o in report.outcomes if o.action.entry == "volume/v1")
    assert (first.status, first.attempts) == (Status.DONE, 3)
    assert site.calls().count("volume/v1") == 3
    assert site.executed().count("volume/v1") == 1
    with site.store() as store:
        entry = next(e for e in store.journal(run_id=report.run_id or "") if e.entry_id ==
                     "volume/v1")
        assert (entry.status, entry.attempts) == (OpStatus.DONE, 3)


def test_retries_run_out(site: Site) -> None:
    site.write(volume_site(volumes=1, users=0))
    site.fault("volume/v1", "UNAVAILABLE", 10)
    report = site.apply(site.plan())
    (outcome,) = report.outcomes
    assert (outcome.status, outcome.attempts, outcome.code, outcome.error) == (
        Status.FAILED, 4, "XCE835", "UNAVAILABLE")
    assert "after 4 attempts" in outcome.message
    assert report.exit_code == 1


def test_a_failure_skips_its_dependents_and_the_rest_goes_on(site: Site) -> None:
    site.write(volume_site(volumes=2, users=2))
    site.fault("volume/v1", "INVALID_ARGUMENT", 1)
    plan = site.plan()
    report = site.apply(plan)
    by_entry = {o.action.entry: o for o in report.outcomes}
    assert by_entry["volume/v1"].status is Status.FAILED
    assert by_entry["volume/v1"].attempts == 1  # not retryable
    for user in ("u01", "u02"):
        skipped = by_entry[f"volume-dir/v1/{user}"]
        assert (skipped.status, skipped.code) == (Status.SKIPPED, "XCE832")
        assert skipped.message == "depends on create:volume/v1, which failed"
        assert by_entry[f"volume-dir/v2/{user}"].status is Status.DONE
    assert by_entry["volume/v2"].status is Status.DONE
    assert report.exit_code == 1
    assert "volume-dir/v1/u01" not in site.calls()
    with site.store() as store:
        statuses = {e.entry_id: e.status for e in store.journal(run_id=report.run_id or "")}
        assert statuses["volume/v1"] is OpStatus.FAILED
        assert statuses["volume-dir/v1/u01"] is OpStatus.SKIPPED
        assert store.get_run(report.run_id or "").status is RunStatus.FAILED  # type: ignore[union-attr]
        assert store.get_applied("test") is None
    # the same plan again finishes the rest: its own done entries do not make it stale
    rerun = site.apply(plan)
    assert rerun.exit_code == 0
    assert rerun.counts() == {"done": 3, "already-done": 3, "failed": 0, "skipped": 0}
    assert Counter(site.executed()) == Counter(a.entry for a in plan.actions)
