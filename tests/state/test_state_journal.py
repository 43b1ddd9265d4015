"""Runs and the operation journal: recorded before each call, queried to resume a plan."""

from __future__ import annotations

import pytest

from reconciler.state import OpStatus, PlannedOp, RunStatus, StateStore
from tests.state.targets import Target

PLAN = "sha256:" + "a" * 64
OTHER_PLAN = "sha256:" + "b" * 64


def op(n: str, action: str = "create") -> PlannedOp:
    return PlannedOp(f"op-{n}", action, f"volume-dir/shared/{n}", "shared-fs")


def test_run_lifecycle(store: StateStore) -> None:
    run = store.start_run("run-1", PLAN, "alice@ci:1/x")
    assert (run.status, run.finished, run.plan_digest) == (RunStatus.RUNNING, None, PLAN)
    done = store.finish_run("run-1", RunStatus.SUCCEEDED)
    assert done.status is RunStatus.SUCCEEDED
    assert done.finished is not None and done.finished >= done.started
    assert store.get_run("run-1") == done
    assert store.get_run("run-2") is None
    with pytest.raises(LookupError):
        store.finish_run("run-2", RunStatus.FAILED)


def test_runs_most_recent_first_and_by_plan(store: StateStore) -> None:
    for run_id, digest in [("r1", PLAN), ("r2", OTHER_PLAN), ("r3", PLAN)]:
        store.start_run(run_id, digest, "h")
    assert [r.run_id for r in store.runs()] == ["r3", "r2", "r1"]
    assert [r.run_id for r in store.runs(PLAN)] == ["r3", "r1"]
    assert [r.run_id for r in store.runs(limit=1)] == ["r3"]


def test_op_recorded_before_and_after_the_call(store: StateStore) -> None:
    store.start_run("r1", PLAN, "h")
    store.journal_add("r1", [op("alice"), op("bob")])
    pending = store.journal(run_id="r1")
    assert [(e.op_id, e.status, e.attempts) for e in pending] == [
        ("op-alice", OpStatus.PENDING, 0),
        ("op-bob", OpStatus.PENDING, 0),
    ]
    running = store.journal_start("r1", op("alice"))
    assert (running.status, running.attempts, running.finished) == (OpStatus.RUNNING, 1, None)
    assert running.started is not None
    done = store.journal_finish("r1", "op-alice", OpStatus.DONE,
                                result={"entry": {"id": "x", "n": 1}})
    assert done.status is OpStatus.DONE
    assert done.result == {"entry": {"id": "x", "n": 1}}
    assert done.finished is not None and done.finished >= running.started
    failed = store.journal_finish("r1", "op-bob", OpStatus.FAILED,
                                  error="UNAVAILABLE: proxy down")
    assert (failed.status, failed.error, failed.result) == (
        OpStatus.FAILED,
        "UNAVAILABLE: proxy down",
        None,
    )


def test_finish_needs_an_outcome_and_a_known_op(store: StateStore) -> None:
    store.start_run("r1", PLAN, "h")
    store.journal_start("r1", op("alice"))
    with pytest.raises(ValueError, match="cannot record 'pending'"):
        store.journal_finish("r1", "op-alice", OpStatus.PENDING)
    with pytest.raises(LookupError):
        store.journal_finish("r1", "op-nobody", OpStatus.DONE)


def test_resume_skips_done_ops_and_retries_the_rest(store: StateStore) -> None:
    ops = [op("a"), op("b"), op("c"), op("d")]
    store.start_run("r1", PLAN, "h")
    store.journal_add("r1", ops)
    store.journal_start("r1", ops[0])
    store.journal_finish("r1", "op-a", OpStatus.DONE)
    store.journal_start("r1", ops[1])
    store.journal_finish("r1", "op-b", OpStatus.FAILED, error="boom")
    store.journal_start("r1", ops[2])  # the runner died during this call
    store.finish_run("r1", RunStatus.INTERRUPTED)

    assert store.done_op_ids(PLAN) == {"op-a"}
    assert store.done_op_ids(OTHER_PLAN) == frozenset()

    store.start_run("r2", PLAN, "h2")
    store.journal_add("r2", ops)
    by_id = {e.op_id: e for e in store.journal(plan_digest=PLAN)}
    assert by_id["op-a"].run_id == "r1" and by_id["op-a"].status is OpStatus.DONE
    assert {e.op_id: e.status for e in store.journal(run_id="r2")} == {
        "op-b": OpStatus.PENDING,  # failed: its outcome is known, it is simply tried again
        "op-c": OpStatus.RUNNING,  # in doubt: adopted by r2, still in doubt until answered
        "op-d": OpStatus.PENDING,
    }

    # a done op is never started again, even if asked
    again = store.journal_start("r2", ops[0])
    assert (again.status, again.attempts, again.run_id) == (OpStatus.DONE, 1, "r1")
    retry = store.journal_start("r2", ops[1])
    assert (retry.status, retry.attempts, retry.error) == (OpStatus.RUNNING, 2, None)
    store.journal_finish("r2", "op-b", OpStatus.DONE)
    assert store.done_op_ids(PLAN) == {"op-a", "op-b"}


def test_a_done_op_stays_done(target: Target) -> None:
    """A superseded runner's late outcome cannot undo a done op (the next run would redo it)."""
    with target.open() as old_runner, target.open() as new_runner:
        old_runner.start_run("r1", PLAN, "h1")
        old_runner.journal_start("r1", op("alice"))  # r1's call is in flight; r1 stalls
        new_runner.start_run("r2", PLAN, "h2")
        new_runner.journal_start("r2", op("alice"))  # r2 took over and sends it again
        done = new_runner.journal_finish("r2", "op-alice", OpStatus.DONE,
                                         result={"entry": {"n": 1}})
        for late in (OpStatus.FAILED, OpStatus.SKIPPED, OpStatus.DONE, OpStatus.RUNNING):
            for run in ("r1", "r2"):
                kept = old_runner.journal_finish(run, "op-alice", late,
                                                 error="DEADLINE_EXCEEDED: late")
                assert kept == done
        assert not old_runner.journal_abandon("r2", "op-alice", "XCE834: no plan needs it")
    with target.open() as store:
        assert store.journal(plan_digest=PLAN) == [done]
        assert (done.run_id, done.attempts, done.error) == ("r2", 2, None)
        assert store.done_op_ids(PLAN) == {"op-alice"}


def test_runs_and_ops_in_doubt_of_one_site(store: StateStore) -> None:
    """Sites sharing a store find their own runs however many other runs came since; a
    prefix is matched literally ('_' is no wildcard)."""
    store.start_run("apply/east@1", PLAN, "h")
    store.journal_start("apply/east@1", op("z"))  # its runner died during this call
    store.journal_start("apply/east@1", op("y"))
    store.journal_finish("apply/east@1", "op-y", OpStatus.DONE)
    for n in range(30):
        store.start_run(f"apply/west@{n}", OTHER_PLAN, "h")
    store.start_run("apply/e_st@1", OTHER_PLAN, "h")
    store.journal_start("apply/e_st@1", op("c"))
    store.start_run("apply/east@2", PLAN, "h")
    store.journal_start("apply/east@2", op("a"))

    assert [r.run_id for r in store.runs(prefix="apply/east@", limit=5)] == [
        "apply/east@2",
        "apply/east@1",
    ]
    assert [r.run_id for r in store.runs(OTHER_PLAN, prefix="apply/e_st@")] == ["apply/e_st@1"]
    # oldest run first, so that a newer run's op for the same action wins
    assert [e.op_id for e in store.in_doubt("apply/east@")] == ["op-z", "op-a"]
    assert [e.op_id for e in store.in_doubt("apply/e_st@")] == ["op-c"]
    assert store.in_doubt("apply/north@") == []


def test_journal_query_needs_exactly_one_key(store: StateStore) -> None:
    with pytest.raises(ValueError):
        store.journal()
    with pytest.raises(ValueError):
        store.journal(run_id="r1", plan_digest=PLAN)


def test_large_journal_is_recorded_in_bulk(store: StateStore) -> None:
    ops = [op(f"{n:06d}") for n in range(20_000)]
    store.start_run("r1", PLAN, "h")
    store.journal_add("r1", ops)
    for planned in ops[:3]:
        store.journal_start("r1", planned)
        store.journal_finish("r1", planned.op_id, OpStatus.DONE)
    entries = store.journal(run_id="r1")
    assert len(entries) == 20_000
    assert store.done_op_ids(PLAN) == {"op-000000", "op-000001", "op-000002"}


def test_applied_digest_per_site(store: StateStore) -> None:
    assert store.get_applied("hpc-east") is None
    store.set_applied("hpc-east", "sha256:1", "abc123")
    latest = store.set_applied("hpc-east", "sha256:2", None)
    store.set_applied("hpc-west", "sha256:9", "fff")
    assert store.get_applied("hpc-east") == latest
    assert (latest.digest, latest.revision) == ("sha256:2", None)


def test_drift_history_most_recent_first(store: StateStore) -> None:
    for n in range(3):
        store.record_drift("hpc-east", {"missing": n, "extra": 0})
    store.record_drift("hpc-west", {"missing": 7})
    history = store.drift_history("hpc-east")
    assert [h.counts["missing"] for h in history] == [2, 1, 0]
    assert [h.counts["missing"] for h in store.drift_history("hpc-east", limit=2)] == [2, 1]
    assert store.drift_history("hpc-north") == []
