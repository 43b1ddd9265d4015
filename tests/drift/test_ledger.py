"""The drift ledger in the state store, on real SQLite and real PostgreSQL alike: a drift
is notified once, a changed value and a resolution are news, and two runs claiming the
same notifications at once never both send them."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from reconciler.state import Holder, LockHeld, LockLost, StateStore
from reconciler.state.store import DriftSeen, notification_lock
from tests.state.targets import WORKERS, Target

SITE = "hpc-east"
T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
ME = Holder("runner-a", "ci-1", "42")
OTHER = Holder("runner-b", "ci-2")


def seen(subject: str, value: str) -> DriftSeen:
    """A drift of ``subject`` with one value; the value is part of its fingerprint."""
    return DriftSeen(f"fp:{subject}:{value}", subject, {"entry": subject, "value": value})


def record(store: StateStore, *drift: DriftSeen, days: float = 0) -> None:
    store.record_drift(SITE, {"total": len(drift)}, drift, at=T0 + timedelta(days=days))


def notify(store: StateStore, days: float = 0, *, digest: bool = False) -> list[str]:
    """Claim, "send" and mark as the email does; returns what was sent."""
    pending = store.claim_notifications(SITE, ME, ttl=60)
    store.mark_notified(SITE, pending.fingerprints, T0 + timedelta(days=days),
                        holder=ME.name, digest=digest)
    return list(pending.fingerprints)


def test_a_drift_seen_twice_is_one_drift_that_keeps_its_first_sighting(store: StateStore) -> None:
    record(store, seen("volume-dir/a", "0700"), seen("host/cn02", "drained"))
    record(store, seen("volume-dir/a", "0700"), seen("host/cn02", "drained"), days=3)
    (first, second) = store.open_drift(SITE)
    assert (first.subject, second.subject) == ("host/cn02", "volume-dir/a")
    assert first.first_seen == T0 and first.last_seen == T0 + timedelta(days=3)
    assert not first.notified and first.notified_at is None
    assert [e.subject for e in store.pending_notifications(SITE).new] == [
        "host/cn02", "volume-dir/a"]
    assert [r.counts["total"] for r in store.drift_history(SITE)] == [2, 2]


def test_two_runs_with_the_same_drift_notify_once(store: StateStore) -> None:
    record(store, seen("volume-dir/a", "0700"))
    assert notify(store) == ["fp:volume-dir/a:0700"]
    record(store, seen("volume-dir/a", "0700"), days=1)
    pending = store.pending_notifications(SITE)
    assert not pending.fingerprints
    assert pending.last_notified == T0
    (entry,) = store.open_drift(SITE)
    assert entry.notified and entry.notified_at == T0


def test_a_changed_value_is_news_as_before_and_after(store: StateStore) -> None:
    record(store, seen("quota/alice", "10GiB"))
    notify(store)
    record(store, seen("quota/alice", "15GiB"), days=1)
    pending = store.pending_notifications(SITE)
    assert not pending.new and not pending.resolved
    ((before, after),) = pending.changed
    assert (before.detail["value"], after.detail["value"]) == ("10GiB", "15GiB")
    assert before.resolved_at == T0 + timedelta(days=1) and after.first_seen == before.resolved_at
    notify(store, days=1)
    assert not store.pending_notifications(SITE).fingerprints
    assert [e.detail["value"] for e in store.open_drift(SITE)] == ["15GiB"]


def test_a_notified_drift_that_is_gone_is_news_then_forgotten(store: StateStore) -> None:
    record(store, seen("host/cn02", "drained"), seen("volume-dir/a", "0700"))
    notify(store)
    record(store, seen("volume-dir/a", "0700"), days=2)
    pending = store.pending_notifications(SITE)
    assert [e.subject for e in pending.resolved] == ["host/cn02"]
    assert pending.resolved[0].resolved_at == T0 + timedelta(days=2)
    assert [e.subject for e in store.open_drift(SITE)] == ["volume-dir/a"]
    notify(store, days=2)
    assert not store.pending_notifications(SITE).fingerprints


def test_drift_that_comes_and_goes_between_notifications_is_not_news(store: StateStore) -> None:
    record(store, seen("host/cn02", "drained"))
    notify(store)
    record(store, seen("host/cn02", "lost"), days=1)  # changed, not told yet
    record(store, seen("host/cn02", "drained"), days=2)  # and back as it was told
    record(store, seen("host/cn02", "drained"), seen("volume-dir/b", "0755"), days=3)
    record(store, seen("host/cn02", "drained"), days=4)  # b came and went unseen
    pending = store.pending_notifications(SITE)
    assert not pending.fingerprints, pending
    (entry,) = store.open_drift(SITE)
    assert entry.first_seen == T0 and entry.notified


def test_a_drift_back_after_its_resolution_was_told_is_new_again(store: StateStore) -> None:
    record(store, seen("host/cn02", "drained"))
    notify(store)
    record(store, days=1)
    notify(store, days=1)
    record(store, seen("host/cn02", "drained"), days=5)
    (entry,) = store.pending_notifications(SITE).new
    assert entry.first_seen == T0 + timedelta(days=5) and entry.notified_at is None


def test_sites_have_their_own_ledgers(store: StateStore) -> None:
    record(store, seen("host/cn02", "drained"))
    store.record_drift("hpc-west", {}, [seen("host/cn02", "drained")], at=T0)
    notify(store)
    assert [e.subject for e in store.pending_notifications("hpc-west").new] == ["host/cn02"]
    store.record_drift("hpc-west", {}, [], at=T0)
    assert store.open_drift("hpc-west") == [] and len(store.open_drift(SITE)) == 1


def test_a_claim_is_one_runs_until_marked_or_released(store: StateStore) -> None:
    record(store, seen("host/cn02", "drained"))
    claimed = store.claim_notifications(SITE, ME, ttl=60)
    assert claimed.fingerprints == ("fp:host/cn02:drained",)
    with pytest.raises(LockHeld) as held:
        store.claim_notifications(SITE, OTHER, ttl=60)
    assert held.value.lock.holder == ME.name and held.value.lock.job_id == "42"
    lock = store.get_lock(notification_lock(SITE))
    assert lock is not None and lock.holder == ME.name  # xce-lock list shows who notifies
    store.release_notifications(SITE, ME.name)  # the send failed: nothing is marked
    assert store.claim_notifications(SITE, OTHER, ttl=60).fingerprints == claimed.fingerprints
    assert store.mark_notified(SITE, claimed.fingerprints, T0, holder=OTHER.name) == 1
    assert store.get_lock(notification_lock(SITE)) is None
    assert not store.claim_notifications(SITE, ME, ttl=60).fingerprints


def test_marking_without_the_claim_marks_nothing(store: StateStore) -> None:
    record(store, seen("host/cn02", "drained"))
    with pytest.raises(LockLost):
        store.mark_notified(SITE, ["fp:host/cn02:drained"], T0, holder=ME.name)
    pending = store.claim_notifications(SITE, ME, ttl=0.2)
    time.sleep(0.4)  # the lease ran out: another run may have claimed and sent it meanwhile
    with pytest.raises(LockLost):
        store.mark_notified(SITE, pending.fingerprints, T0, holder=ME.name)
    assert store.pending_notifications(SITE).fingerprints == pending.fingerprints


def test_the_digest_time_is_kept(store: StateStore) -> None:
    assert store.last_digest(SITE) is None
    record(store, seen("host/cn02", "drained"))
    notify(store, digest=True)
    notify(store, days=1)  # an ordinary notification leaves the digest time alone
    assert store.last_digest(SITE) == T0
    assert store.pending_notifications(SITE).last_notified == T0 + timedelta(days=1)


def _claimer(target: Target, name: str, barrier: Any, results: Any) -> None:
    """One run: claim (waiting while another holds the claim), "send", mark."""
    with target.open() as opened:
        barrier.wait(timeout=30)
        deadline = time.monotonic() + 20
        while True:
            try:
                pending = opened.claim_notifications(SITE, Holder(name, "ci"), ttl=30)
                break
            except LockHeld:
                if time.monotonic() > deadline:
                    results.put((name, "gave up"))
                    return
                time.sleep(0.01)
        sent = list(pending.fingerprints)
        if sent:
            time.sleep(0.2)  # the email goes out while the others wait
            opened.mark_notified(SITE, sent, holder=name)
        else:
            opened.release_notifications(SITE, name)
        results.put((name, sent))


def test_concurrent_runs_send_each_notification_exactly_once(target: Target) -> None:
    with target.open() as opened:
        opened.record_drift(SITE, {}, [seen("host/cn02", "drained"), seen("quota/a", "1")])
    barrier, results = WORKERS.Barrier(4), WORKERS.Queue()
    workers = [WORKERS.Process(target=_claimer, args=(target, f"run-{i}", barrier, results))
               for i in range(4)]
    for w in workers:
        w.start()
    outcomes = dict(results.get(timeout=60) for _ in workers)
    for w in workers:
        w.join(timeout=30)
    senders = {name: sent for name, sent in outcomes.items() if sent}
    assert len(senders) == 1, outcomes
    assert sorted(next(iter(senders.values()))) == ["fp:host/cn02:drained", "fp:quota/a:1"]
    with target.open() as opened:
        assert not opened.pending_notifications(SITE).fingerprints


def _recorder(target: Target, subjects: list[str], barrier: Any, done: Any) -> None:
    with target.open() as opened:
        barrier.wait(timeout=30)
        for _ in range(15):
            opened.record_drift(SITE, {}, [seen(s, "v") for s in subjects])
    done.put(True)


def test_concurrent_runs_of_a_site_leave_one_runs_view(target: Target) -> None:
    """Runs are serialised per site: the open drift is what one whole run saw, never a mix."""
    views = (["host/a", "host/b"], ["host/c"])
    barrier, done = WORKERS.Barrier(2), WORKERS.Queue()
    workers = [WORKERS.Process(target=_recorder, args=(target, v, barrier, done)) for v in views]
    for w in workers:
        w.start()
    assert [done.get(timeout=60) for _ in workers] == [True, True]
    for w in workers:
        w.join(timeout=30)
    with target.open() as opened:
        assert [e.subject for e in opened.open_drift(SITE)] in views
        assert len(opened.drift_history(SITE, limit=100)) == 30
