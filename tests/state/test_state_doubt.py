"""Ops in doubt: sent, no outcome recorded. They stay in doubt, across any number of runs
that adopt them, skip them or die, until a call of the same op is answered (issue 8 §2).

A runner killed twice in a row used to reset the first kill's ops in doubt to ``pending``
when the second run journaled its plan; the third run then compared their entries with
the plan's fingerprints, found them changed by the ops themselves, and refused the plan as
stale for ever (XCE822).
"""

from __future__ import annotations

import pytest

from reconciler.state import JournalEntry, OpStatus, PlannedOp, RunStatus, StateStore

PLAN = "sha256:" + "a" * 64
OTHER = "sha256:" + "b" * 64
PREFIX = "apply/east@"


def op(n: str) -> PlannedOp:
    return PlannedOp(f"op-{n}", "create", f"volume-dir/shared/{n}", "shared-fs")


def row(store: StateStore, op_id: str) -> JournalEntry:
    (found,) = [e for r in store.runs(limit=100) for e in store.journal(run_id=r.run_id)
                if e.op_id == op_id]
    return found


def killed_run(store: StateStore, n: int, ops: list[PlannedOp], sent: list[PlannedOp],
               digest: str = PLAN) -> str:
    """A run that journals ``ops``, sends ``sent`` and dies; the next runner marks it."""
    run_id = f"{PREFIX}{n}"
    store.start_run(run_id, digest, f"h{n}")
    store.journal_add(run_id, ops)
    for planned in sent:
        store.journal_start(run_id, planned)
    store.finish_run(run_id, RunStatus.INTERRUPTED)
    return run_id


@pytest.mark.parametrize("kills", [2, 3, 5])
def test_an_op_in_doubt_stays_in_doubt_through_every_killed_rerun(store: StateStore,
                                                                   kills: int) -> None:
    """The reproduction: kill, rerun and kill before the op is sent again, rerun …"""
    ops = [op("a"), op("b"), op("c")]
    killed_run(store, 1, ops, sent=[ops[0]])
    for n in range(2, kills + 1):  # each rerun journals the plan again, then dies unsent
        killed_run(store, n, ops, sent=[])
        doubt = store.in_doubt(PREFIX)
        assert [(e.op_id, e.status, e.run_id, e.attempts) for e in doubt] == [
            ("op-a", OpStatus.RUNNING, f"{PREFIX}{n}", 1)]
    # the last rerun sends it again: the provider answers (it had done it), and only then
    # does the doubt end
    last = f"{PREFIX}{kills + 1}"
    store.start_run(last, PLAN, "h")
    store.journal_add(last, ops)
    assert store.journal_start(last, ops[0]).attempts == 2
    assert store.journal_finish(last, "op-a", OpStatus.DONE).status is OpStatus.DONE
    assert store.in_doubt(PREFIX) == []


def test_a_skip_never_ends_doubt(store: StateStore) -> None:
    """A rerun without destroy permission skips a delete a destroying run left in doubt."""
    ops = [op("a"), op("b")]
    killed_run(store, 1, ops, sent=ops[:1])
    store.start_run(f"{PREFIX}2", PLAN, "h")
    store.journal_add(f"{PREFIX}2", ops)
    for planned in ops:
        store.journal_finish(f"{PREFIX}2", planned.op_id, OpStatus.SKIPPED, error="XCE830: …")
    assert row(store, "op-a").status is OpStatus.RUNNING
    assert (row(store, "op-b").status, row(store, "op-b").error) == (OpStatus.SKIPPED,
                                                                       "XCE830: …")


def test_a_superseded_runners_late_failure_leaves_the_newer_call_in_doubt(
        store: StateStore) -> None:
    store.start_run("r1", PLAN, "h1")
    store.journal_start("r1", op("a"))  # r1's call hangs; r1 is fenced off
    store.start_run("r2", PLAN, "h2")
    store.journal_add("r2", [op("a")])
    store.journal_start("r2", op("a"))  # r2 sends it again, and is killed mid-call
    late = store.journal_finish("r1", "op-a", OpStatus.FAILED, error="DEADLINE_EXCEEDED: late")
    assert (late.status, late.run_id, late.error) == (OpStatus.RUNNING, "r2", None)
    # a late success is the truth, whichever run gets it
    assert store.journal_finish("r1", "op-a", OpStatus.DONE).status is OpStatus.DONE


def test_a_call_without_a_known_outcome_keeps_its_op_in_doubt(store: StateStore) -> None:
    store.start_run("r1", PLAN, "h")
    store.journal_add("r1", [op("a")])
    store.journal_start("r1", op("a"))
    timed_out = store.journal_finish("r1", "op-a", OpStatus.RUNNING,
                                     error="DEADLINE_EXCEEDED: no answer within 30s")
    assert (timed_out.status, timed_out.error) == (OpStatus.RUNNING,
                                                   "DEADLINE_EXCEEDED: no answer within 30s")
    assert timed_out.finished is not None
    store.finish_run("r1", RunStatus.FAILED)
    assert [e.op_id for e in store.in_doubt("r")] == ["op-a"]
    # only an op that is running can be kept in doubt this way
    store.start_run("r2", PLAN, "h")
    store.journal_add("r2", [op("b")])
    assert store.journal_finish("r2", "op-b", OpStatus.RUNNING).status is OpStatus.PENDING
    again = store.journal_start("r2", op("a"))
    assert (again.attempts, again.error, again.finished) == (2, None, None)


def test_only_recovery_closes_a_dead_runs_op_in_doubt(store: StateStore) -> None:
    ops = [op("a"), op("b")]
    dead = killed_run(store, 1, ops, sent=ops)
    assert not store.journal_abandon("someone-else", "op-a", "XCE834: …")
    assert store.journal_abandon(dead, "op-a", "XCE834: no plan needs it")
    assert (row(store, "op-a").status, row(store, "op-a").error) == (OpStatus.SKIPPED,
                                                                       "XCE834: no plan needs it")
    assert not store.journal_abandon(dead, "op-a", "twice")
    store.start_run(f"{PREFIX}2", PLAN, "h")
    store.journal_add(f"{PREFIX}2", ops)  # adopted: no longer the dead run's to close
    assert not store.journal_abandon(dead, "op-b", "XCE834: …")
    assert row(store, "op-b").status is OpStatus.RUNNING


def test_a_finished_run_drops_the_ops_it_never_sent(store: StateStore) -> None:
    """A killed --auto-approve run leaves no plan's worth of pending rows behind: the ops it
    never sent are dropped; what it sent (done, failed, in doubt) is kept."""
    ops = [op(f"{n:04d}") for n in range(2_000)]
    store.start_run("other", OTHER, "h")
    store.journal_add("other", [op("z")])  # another run's pending op: not this run's to drop
    store.start_run("r1", PLAN, "h")
    store.journal_add("r1", ops)
    store.journal_start("r1", ops[0])
    store.journal_finish("r1", ops[0].op_id, OpStatus.DONE)
    store.journal_start("r1", ops[1])
    store.journal_finish("r1", ops[1].op_id, OpStatus.FAILED, error="NOT_FOUND: gone")
    store.journal_start("r1", ops[2])  # in doubt
    store.finish_run("r1", RunStatus.INTERRUPTED)
    assert [(e.op_id, e.status) for e in store.journal(run_id="r1")] == [
        ("op-0000", OpStatus.DONE), ("op-0001", OpStatus.FAILED), ("op-0002", OpStatus.RUNNING)]
    assert [e.op_id for e in store.journal(run_id="other")] == ["op-z"]
    # a rerun of the same plan journals them again from the plan
    store.start_run("r2", PLAN, "h")
    store.journal_add("r2", ops)
    assert len(store.journal(plan_digest=PLAN)) == len(ops)
    assert len(store.journal(run_id="r2")) == len(ops) - 1  # op-0000 stays r1's, done
