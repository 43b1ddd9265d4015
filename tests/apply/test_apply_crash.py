"""Crash safety: a REAL xce-apply process killed with SIGKILL mid-run, then run again.

The provider is a separate slow process that logs every effective change and deduplicates
op_ids; the kill lands while one call is in flight (the journal says ``running``). The
re-run must finish exactly the remainder: every change made once, every op done.
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.apply import RetryPolicy, Status
from reconciler.apply.ops import op_id, plan_digest
from reconciler.state import JournalEntry, OpStatus, RunStatus, StateStore
from tests.apply.conftest import Site, pool, volume, volume_site
from tests.apply.crashing import start_apply
from tests.apply.events import Doorbell

DELAY = 0.1  # each call's work: a kill at its arrival lands while it is in flight


@pytest.fixture
def bell(site: Site) -> Iterator[Doorbell]:
    """Rung by the slow provider at each call received and change made, and by each
    progress line of an apply started with it: what the waits below wake on."""
    with Doorbell(site.home / "events") as ringing:
        yield ringing


def xce_apply(site: Site, bell: Doorbell, *args: str) -> subprocess.Popen[str]:
    """One call at a time, so the test knows which op is in flight; stderr goes to
    ``log(site)``."""
    return start_apply(site.cli_args(*args, "--parallelism", "1"), log(site), bell)


def log(site: Site) -> Path:
    return site.root / "apply.log"


def journal_now(store: StateStore, digest: str | None) -> list[JournalEntry]:
    if digest is not None:
        return store.journal(plan_digest=digest)
    runs = store.runs(limit=1)
    return store.journal(run_id=runs[0].run_id) if runs else []


def kill_when(site: Site, bell: Doorbell, proc: subprocess.Popen[str], done: int,
              digest: str | None, *, in_call: bool = True) -> str:
    """SIGKILL ``proc`` once ``done`` ops are done and the next is running; return that op.

    Checked at each event (a call received, a change made, a progress line), so the kill
    lands at the first one past the point, or the apply's end fails the test.
    ``in_call``: wait until the provider has received that op's call (else the kill may land
    between the journal write and the call).
    """
    in_flight: list[str] = []

    def at_point() -> bool:
        journal = journal_now(store, digest)
        states = Counter(e.status for e in journal)
        running = [e.op_id for e in journal if e.status is OpStatus.RUNNING]
        sent = len(site.calls()) > states[OpStatus.DONE] or not in_call
        in_flight[:] = running[:1]
        return states[OpStatus.DONE] >= done and bool(running) and sent

    with site.store() as store:
        reached = bell.wait(at_point, proc, f"{done} ops done and the next in flight")
        assert reached, proc.communicate()
        proc.send_signal(signal.SIGKILL)
        proc.wait()  # reaped: its pid is gone, as after a CI runner's kill
        return in_flight[0]


def finish(site: Site, proc: subprocess.Popen[str]) -> dict[str, object]:
    out, _ = proc.communicate(timeout=60)
    err = log(site).read_text()
    assert proc.returncode == 0, err
    assert "XCE826" in err  # took over the dead runner's lock without waiting for its lease
    assert "XCE827" in err  # and finished its interrupted run
    report: dict[str, object] = json.loads(out)
    return report


@pytest.mark.parametrize(("done_before_kill", "in_call"), [(0, True), (3, False), (6, True)])
def test_killed_plan_apply_finishes_exactly_the_remainder(site: Site, bell: Doorbell,
                                                          done_before_kill: int,
                                                          in_call: bool) -> None:
    site.write(volume_site(volumes=2, users=3), delay=DELAY)
    plan = site.plan()
    plan_file = site.save(plan)
    digest = plan_digest(plan)
    in_doubt = kill_when(site, bell, xce_apply(site, bell, str(plan_file)), done_before_kill,
                         digest, in_call=in_call)

    report = finish(site, xce_apply(site, bell, str(plan_file)))
    counts = report["counts"]
    assert isinstance(counts, dict)
    assert counts["already-done"] >= done_before_kill
    assert counts["done"] + counts["already-done"] == len(plan.actions)
    # every change happened exactly once, and nothing is missing
    assert Counter(site.executed()) == Counter(a.entry for a in plan.actions)
    with site.store() as store:
        journal = {e.op_id: e for e in store.journal(plan_digest=digest)}
        assert len(journal) == len(plan.actions)
        assert {e.status for e in journal.values()} == {OpStatus.DONE}
        # the op in flight at the kill was sent again under the same op_id: the provider
        # deduplicated it, and the journal counts both attempts
        assert journal[in_doubt].attempts == 2
        sent = site.calls().count(journal[in_doubt].entry_id)
        assert sent == 2 if in_call else sent in (1, 2)
        # every call was journaled before it was made (a kill may fall in between)
        attempts = sum(e.attempts for e in journal.values())
        assert len(site.calls()) <= attempts <= len(site.calls()) + (0 if in_call else 1)
        assert [r.status for r in store.runs(digest)] == [RunStatus.SUCCEEDED,
                                                           RunStatus.INTERRUPTED]
        assert store.list_locks() == []
    assert site.plan().actions == ()


@pytest.mark.parametrize("orphan_done_first", [True, False])
def test_killed_auto_approve_finishes_with_a_new_plan(site: Site, bell: Doorbell,
                                                     orphan_done_first: bool) -> None:
    """The killed runner's provider call goes on (its own process) and may finish either
    before the re-run plans (the new plan no longer has the action: the op in doubt is
    closed) or after (the new plan has it: it is sent under the old op_id and deduplicated).
    """
    site.write(volume_site(volumes=2, users=3), delay=DELAY)
    in_flight = "volume-dir/v1/u01"  # the third action: after both volumes
    site.configure(delay=DELAY, hold=[] if orphan_done_first else [in_flight])
    entries = Counter(a.entry for a in site.plan().actions)
    in_doubt = kill_when(site, bell, xce_apply(site, bell, "--auto-approve"), 2, None)
    if orphan_done_first:
        bell.wait(lambda: in_flight in site.executed(), what="the orphaned call's change")
        rerun = xce_apply(site, bell, "--auto-approve")
    else:  # the orphaned call completes only once the re-run has sent the op again
        rerun = xce_apply(site, bell, "--auto-approve")
        sent_again = bell.wait(lambda: site.calls().count(in_flight) >= 2, rerun,
                               "the re-run's call")
        assert sent_again, rerun.communicate()
        assert in_flight not in site.executed()
        site.let_go()

    report = finish(site, rerun)
    assert report["result"] == "applied"
    assert Counter(site.executed()) == entries  # each change once, none missing
    assert site.plan().actions == ()
    with site.store() as store:
        runs = store.runs()
        assert [r.status for r in runs] == [RunStatus.SUCCEEDED, RunStatus.INTERRUPTED]
        (op,) = [e for r in runs for e in store.journal(run_id=r.run_id) if e.op_id == in_doubt]
        if orphan_done_first:  # closed: the entry already matched, nothing to send
            assert (op.status, op.entry_id) == (OpStatus.SKIPPED, in_flight)
            assert op.error is not None and op.error.startswith("XCE834")
            assert site.calls().count(in_flight) == 1
        else:  # adopted by the new run under the same op_id, and deduplicated
            assert (op.status, op.run_id, op.attempts) == (OpStatus.DONE, runs[0].run_id, 2)
            assert site.calls().count(in_flight) == 2
            assert site.call_ops(in_flight) == [in_doubt, in_doubt]


def test_an_op_in_doubt_skipped_for_want_of_permission_stays_in_doubt(site: Site,
                                                                     bell: Doorbell) -> None:
    """Killed mid-delete under --allow-destroy, run again without it (the delete is skipped)
    and then with it: the delete the first run sent is still this plan's own change, not a
    change that makes the plan stale."""
    site.write([volume("v1")])
    site.seed([pool("spare")])
    site.configure(delay=DELAY, hold=["storage-pool/spare"])
    plan = site.plan()
    plan_file = site.save(plan)
    first = xce_apply(site, bell, str(plan_file), "--allow-destroy")
    in_flight = bell.wait(lambda: "storage-pool/spare" in site.calls(), first, "the delete")
    assert in_flight, first.communicate()
    first.send_signal(signal.SIGKILL)
    first.wait()
    site.let_go()  # the orphaned call deletes the pool after all
    bell.wait(lambda: "storage-pool/spare" in site.executed(), what="the orphaned delete")

    without = xce_apply(site, bell, str(plan_file))
    out, _ = without.communicate(timeout=60)
    assert without.returncode == 0, log(site).read_text()
    skipped = [a for a in json.loads(out)["actions"] if a["status"] == "skipped"]
    assert [(a["entry"], a["code"]) for a in skipped] == [("storage-pool/spare", "XCE830")]
    (delete,) = [a for a in plan.actions if a.entry == "storage-pool/spare"]
    op = op_id(plan_digest(plan), delete)
    with site.store() as store:
        assert [e.op_id for e in store.in_doubt("apply/test@")] == [op]

    again = xce_apply(site, bell, str(plan_file), "--allow-destroy")
    out, _ = again.communicate(timeout=60)
    assert again.returncode == 0, log(site).read_text()
    assert json.loads(out)["result"] == "applied"
    assert Counter(site.executed()) == Counter(a.entry for a in plan.actions)
    assert site.call_ops("storage-pool/spare") == [op, op]  # sent again, deduplicated
    assert site.plan().actions == ()


@pytest.mark.parametrize("code", ["INTERNAL", "DEADLINE_EXCEEDED"])
def test_a_call_whose_outcome_is_unknown_stays_in_doubt(site: Site, code: str) -> None:
    """The provider did it, but its reply was lost or came too late: the action failed, yet
    its op may have been done, so the same plan applied again is not stale because of it."""
    site.write(volume_site(volumes=1, users=2))
    plan = site.plan()
    lost = "volume-dir/v1/u01"
    site.fault(lost, code, 1, after=True)
    first = site.apply(plan, retry=RetryPolicy(retries=0))
    (failed,) = [o for o in first.outcomes if o.status is Status.FAILED]
    assert (failed.action.entry, failed.error) == (lost, code)
    assert "it may have been done, so it stays in doubt" in failed.message
    with site.store() as store:
        (doubt,) = store.in_doubt("apply/test@")
        assert (doubt.op_id, doubt.error) == (failed.op_id, f"{code}: injected fault for {lost}")

    second = site.apply(plan)
    assert (second.result, second.counts()["done"]) == ("applied", 1)
    assert site.call_ops(lost) == [failed.op_id, failed.op_id]
    assert Counter(site.executed()) == Counter(a.entry for a in plan.actions)


def test_an_op_stays_in_doubt_when_a_later_attempt_fails_for_sure(site: Site) -> None:
    """Attempt 1 timed out after the provider made the change; attempt 2 could not reach
    it at all. The op may have been done, so it stays in doubt and is not stale next time."""
    site.write(volume_site(volumes=1, users=2))
    plan = site.plan()
    lost = "volume-dir/v1/u01"
    site.faults(lost, [("DEADLINE_EXCEEDED", 1, True), ("UNAVAILABLE", 5, False)])
    first = site.apply(plan, retry=RetryPolicy(retries=1, delay=0.01))
    (failed,) = [o for o in first.outcomes if o.status is Status.FAILED]
    assert (failed.action.entry, failed.error, failed.attempts) == (lost, "UNAVAILABLE", 2)
    assert "it may have been done, so it stays in doubt" in failed.message
    with site.store() as store:
        assert [e.op_id for e in store.in_doubt("apply/test@")] == [failed.op_id]
    site.faults(lost, [])
    second = site.apply(plan)
    assert (second.result, second.counts()["done"]) == ("applied", 1)
    assert Counter(site.executed()) == Counter(a.entry for a in plan.actions)
