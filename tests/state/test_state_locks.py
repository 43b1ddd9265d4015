"""Locks are TTL leases: one holder at a time, even across processes; expiry frees them."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from reconciler.state import (
    Heartbeat,
    Holder,
    LockHeld,
    LockLost,
    StateError,
    StateStore,
    current_holder,
)
from tests.state.targets import WORKERS, Target


def holder(name: str, job_id: str | None = None) -> Holder:
    return Holder(name, "runner-host", job_id)


def test_acquire_records_who_and_when(store: StateStore) -> None:
    lock = store.acquire("apply/east", holder("a", job_id="4711"), ttl=60)
    assert (lock.name, lock.holder, lock.host, lock.job_id) == (
        "apply/east",
        "a",
        "runner-host",
        "4711",
    )
    assert 59 < (lock.expires - lock.acquired).total_seconds() < 61
    assert store.get_lock("apply/east") == lock
    assert store.list_locks() == [lock]


def test_second_acquirer_fails_fast_naming_the_holder(store: StateStore) -> None:
    store.acquire("apply/east", holder("a", job_id="4711"), ttl=60)
    started = time.monotonic()
    with pytest.raises(LockHeld) as caught:
        store.acquire("apply/east", holder("b"), ttl=60)
    assert time.monotonic() - started < 1
    assert caught.value.lock.holder == "a"
    assert caught.value.code == "XCE806"
    message = caught.value.problems[0].message
    assert "held by a" in message and "CI job 4711" in message
    # the failed attempt changed nothing
    assert store.get_lock("apply/east").holder == "a"  # type: ignore[union-attr]


def test_other_lock_names_are_independent(store: StateStore) -> None:
    store.acquire("apply/east", holder("a"), ttl=60)
    assert store.acquire("apply/west", holder("b"), ttl=60).holder == "b"
    assert [lock.name for lock in store.list_locks()] == ["apply/east", "apply/west"]


def test_holder_may_acquire_again_and_extends_its_lease(store: StateStore) -> None:
    first = store.acquire("apply/east", holder("a"), ttl=5)
    again = store.acquire("apply/east", holder("a"), ttl=60)
    assert again.holder == "a" and again.expires > first.expires


def test_release_only_by_the_holder(store: StateStore) -> None:
    store.acquire("apply/east", holder("a"), ttl=60)
    with pytest.raises(LockLost) as caught:
        store.release("apply/east", "b")
    assert caught.value.current is not None and caught.value.current.holder == "a"
    store.release("apply/east", "a")
    assert store.get_lock("apply/east") is None
    assert store.acquire("apply/east", holder("b"), ttl=60).holder == "b"


def test_force_release_removes_any_holders_lock(store: StateStore) -> None:
    taken = store.acquire("apply/east", holder("a"), ttl=60)
    assert store.force_release("apply/east") == taken
    assert store.force_release("apply/east") is None
    assert store.list_locks() == []


def test_expired_lease_is_taken_over_and_the_old_holder_learns_it(store: StateStore) -> None:
    store.acquire("apply/east", holder("a"), ttl=1.0)
    with pytest.raises(LockHeld):
        store.acquire("apply/east", holder("b"), ttl=60)
    time.sleep(1.1)
    taken = store.acquire("apply/east", holder("b"), ttl=60)
    assert taken.holder == "b"
    with pytest.raises(LockLost) as renew_failed:
        store.renew("apply/east", "a", ttl=60)
    assert "now held by b" in renew_failed.value.problems[0].message
    with pytest.raises(LockLost):
        store.release("apply/east", "a")
    assert store.get_lock("apply/east").holder == "b"  # type: ignore[union-attr]


def test_renew_extends_the_lease_from_now(store: StateStore) -> None:
    first = store.acquire("apply/east", holder("a"), ttl=2)
    time.sleep(0.05)
    renewed = store.renew("apply/east", "a", ttl=2)
    assert renewed.expires > first.expires
    assert renewed.acquired == first.acquired


def test_renew_of_a_released_lock_fails(store: StateStore) -> None:
    store.acquire("apply/east", holder("a"), ttl=60)
    store.force_release("apply/east")
    with pytest.raises(LockLost) as caught:
        store.renew("apply/east", "a", ttl=60)
    assert "nobody holds it now" in caught.value.problems[0].message


def test_waiting_acquirer_gets_the_lock_once_released(target: Target) -> None:
    # two stores = two connections, as two runners would have
    with target.open() as first, target.open() as second:
        first.acquire("apply/east", holder("a"), ttl=60)
        threading.Timer(0.4, first.release, ("apply/east", "a")).start()
        started = time.monotonic()
        lock = second.acquire("apply/east", holder("b"), ttl=60, wait=10, poll=0.05)
        waited = time.monotonic() - started
    assert lock.holder == "b"
    assert 0.3 < waited < 5


def test_waiting_gives_up_after_the_timeout(store: StateStore) -> None:
    store.acquire("apply/east", holder("a"), ttl=60)
    started = time.monotonic()
    with pytest.raises(LockHeld) as caught:
        store.acquire("apply/east", holder("b"), ttl=60, wait=0.3, poll=0.05)
    assert 0.25 < time.monotonic() - started < 3
    assert "gave up after waiting 0.3 s" in caught.value.problems[0].message


def test_heartbeat_keeps_a_short_lease_alive(target: Target) -> None:
    with target.open() as runner, target.open() as other:
        lock = runner.acquire("apply/east", holder("a"), ttl=0.6)
        with Heartbeat(runner, lock, ttl=0.6, interval=0.1) as beat:
            time.sleep(1.0)  # well past the first lease
            with pytest.raises(LockHeld):
                other.acquire("apply/east", holder("b"), ttl=60)
            beat.check()
            assert beat.lock.expires > lock.expires
        runner.release("apply/east", "a")


def beat_ended(lock: str) -> None:
    """Wait for the heartbeat's thread of ``lock``, which ends at its first failure: joined
    (at most 10 s), not polled."""
    for thread in threading.enumerate():
        if thread.name == f"heartbeat {lock}":
            thread.join(10)


def test_heartbeat_reports_a_lost_lock(target: Target) -> None:
    with target.open() as runner, target.open() as operator:
        lock = runner.acquire("apply/east", holder("a"), ttl=30)
        with Heartbeat(runner, lock, ttl=30, interval=0.05) as beat:
            beat.check()
            operator.force_release("apply/east")
            beat_ended("apply/east")
            with pytest.raises(LockLost):
                beat.check()


def test_a_heartbeat_failing_otherwise_stops_the_run(sqlite_target: Target) -> None:
    """A failure that is not a known store error (here the store closed under it) must
    not end the heartbeat's thread silently, leaving the run going without its lease."""
    store = sqlite_target.open()
    lock = store.acquire("apply/east", holder("a"), ttl=30)
    with Heartbeat(store, lock, ttl=30, interval=0.02) as beat:
        store.close()
        beat_ended("apply/east")
        with pytest.raises(StateError) as caught:
            beat.check()
    assert caught.value.code == "XCE802"
    assert "the lock's heartbeat failed: ProgrammingError" in caught.value.problems[0].message


def _race(target: Target, rounds: int, barrier: Any, results: Any) -> None:
    """One runner: for each round, wait for the others, then all grab the same lock."""
    with target.open() as store:
        me = current_holder()
        for n in range(rounds):
            barrier.wait(timeout=30)
            try:
                store.acquire(f"race/{n}", me, ttl=60)
                results.put((n, "won", me.name))
            except LockHeld as err:
                results.put((n, "held", err.lock.holder))


@pytest.mark.parametrize("processes", [2, 4])
def test_processes_racing_for_a_lock_exactly_one_wins(target: Target, processes: int) -> None:
    rounds = 5
    target.open().close()  # migrate first, so the race is about the lock only
    barrier = WORKERS.Barrier(processes)
    results = WORKERS.Queue()
    workers = [
        WORKERS.Process(target=_race, args=(target, rounds, barrier, results))
        for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=60) for _ in range(processes * rounds)]
    for worker in workers:
        worker.join(timeout=30)
        assert worker.exitcode == 0
    for n in range(rounds):
        this_round = [o for o in outcomes if o[0] == n]
        winners = [who for _, result, who in this_round if result == "won"]
        assert len(winners) == 1, this_round
        # every loser was told who won
        assert {who for _, result, who in this_round if result == "held"} == set(winners)
