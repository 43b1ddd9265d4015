"""A lost PostgreSQL connection is opened again, but only while the lease and epoch hold.

A pooler restart or a short failover must not stop a long apply; a runner that was cut off
for so long that another one could have taken over must stop instead (issue 8 §8). The
connection is dropped the two ways it happens: the server ends the backend
(``pg_terminate_backend``, as a failover or an admin does) and a pooler in between restarts.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from reconciler.state import (
    Heartbeat,
    Holder,
    LockLost,
    OpStatus,
    PlannedOp,
    StateError,
    StateStore,
    sql_store,
)
from tests.apply.events import poll
from tests.state.pooler import Pooler
from tests.state.targets import Target, with_options

pytestmark = pytest.mark.postgres

LOCK = "apply/east"
PLAN = "sha256:" + "a" * 64
RUN = "apply/east@1"
OP = PlannedOp("op-a", "create", "volume-dir/shared/a", "shared-fs")
ME = Holder("ci@runner-1:10/aaaa", "runner-1")
OTHER = Holder("ci@runner-2:20/bbbb", "runner-2")


@pytest.fixture
def app_name() -> str:
    return f"xce-t-{secrets.token_hex(4)}"


@pytest.fixture
def named(pg_target: Target, app_name: str) -> Target:
    """The test's store, under an application_name that picks its backend to terminate."""
    return Target("postgresql", with_options(pg_target.url, application_name=app_name))


@pytest.fixture
def pooler(pg_target: Target) -> Iterator[Pooler]:
    relay = Pooler(pg_target.url)
    yield relay
    relay.down()


def terminate(admin: psycopg.Connection[tuple[Any, ...]], app_name: str) -> None:
    killed = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                           "WHERE application_name = %s", (app_name,)).fetchall()
    assert killed == [(True,)]


def running(store: StateStore, ttl: float = 30.0) -> int:
    """Hold the site's lock and epoch, with a run in the journal, as an apply does."""
    store.acquire(LOCK, ME, ttl)
    epoch = store.next_epoch(LOCK)
    store.start_run(RUN, PLAN, ME.name)
    store.journal_add(RUN, [OP])
    return epoch


def test_a_terminated_backend_is_replaced_and_the_call_goes_on(
        named: Target, app_name: str, pg_admin: psycopg.Connection[tuple[Any, ...]]) -> None:
    with named.open() as store:
        running(store)
        for n in (1, 2, 3):
            terminate(pg_admin, app_name)
            assert store.journal_start(RUN, OP).attempts == n
            assert store.reconnects == n
        store.renew(LOCK, ME.name, 30)
        assert store.journal_finish(RUN, OP.op_id, OpStatus.DONE).status is OpStatus.DONE


def test_a_pooler_restart_is_ridden_out(pooler: Pooler) -> None:
    with Target("postgresql", pooler.url).open() as store:
        running(store)
        pooler.down()
        threading.Timer(0.6, pooler.up).start()  # connections refused until then
        started = time.monotonic()
        entry = store.journal_start(RUN, OP)
        assert time.monotonic() - started >= 0.5
        assert (entry.status, entry.attempts, store.reconnects) == (OpStatus.RUNNING, 1, 1)


@pytest.mark.parametrize("took_over", ["lock", "epoch", "lease ran out"])
def test_no_reconnect_once_another_runner_could_have_taken_over(
        pg_target: Target, named: Target, app_name: str,
        pg_admin: psycopg.Connection[tuple[Any, ...]], took_over: str) -> None:
    with named.open() as store, pg_target.open() as other:
        epoch = running(store, ttl=0.5 if took_over == "lease ran out" else 30)
        if took_over == "lock":
            other.force_release(LOCK)
            other.acquire(LOCK, OTHER, 30)
            other.next_epoch(LOCK)
        elif took_over == "epoch":
            other.next_epoch(LOCK)
        else:
            time.sleep(0.6)
        terminate(pg_admin, app_name)
        with pytest.raises(StateError) as caught:
            store.journal_start(RUN, OP)
        # nothing was written: the op is still pending, not sent
        assert [e.status for e in other.journal(run_id=RUN)] == [OpStatus.PENDING]
    error = caught.value
    if took_over == "epoch":
        assert error.code == "XCE808"
        assert f"moved on to {epoch + 1} while this runner held epoch {epoch}" in str(
            error.problems[0].message)
    else:
        assert isinstance(error, LockLost) and error.code == "XCE807"
        why = "its lease ran out" if took_over == "lease ran out" else f"held by {OTHER.name}"
        assert why in error.problems[0].message


def test_a_server_away_longer_than_the_lease_stops_the_run(pooler: Pooler) -> None:
    with Target("postgresql", pooler.url).open() as store:
        running(store, ttl=1.0)
        pooler.down()
        started = time.monotonic()
        with pytest.raises(StateError) as caught:
            store.journal_start(RUN, OP)
        waited = time.monotonic() - started
    assert caught.value.code == "XCE802"
    assert "the connection was lost and could not be opened again" in str(
        caught.value.problems[0].message)
    assert 0.5 <= waited <= 3.0  # bounded by the lease (1 s), not the 10 s default


def test_without_a_lease_reconnecting_is_bounded_too(
        pooler: Pooler, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sql_store, "RECONNECT_S", 0.5)
    with Target("postgresql", pooler.url).open() as store:
        store.get_applied("east")
        pooler.down()
        with pytest.raises(StateError) as caught:
            store.get_applied("east")
        pooler.up()
        assert store.get_applied("east") is None  # and it works again once the server is back
    assert caught.value.code == "XCE802"


def wait_for(done: Any, what: str) -> None:
    """A reconnect or a renewal of the heartbeat's thread: no event marks either, so it is
    polled, every 10 ms at most 1,000 times."""
    poll(done, what=what, every=0.01, tries=1000)


def test_the_heartbeat_rides_out_its_backend_ended_and_keeps_the_lock(
        pg_target: Target, named: Target, app_name: str,
        pg_admin: psycopg.Connection[tuple[Any, ...]]) -> None:
    """The heartbeat renews through the apply's store; ended under it, the renewal opens a
    new connection and the lease stays this runner's (issue 19 §6)."""
    with named.open() as store, pg_target.open() as other:
        lock = store.acquire(LOCK, ME, 2.0)
        with Heartbeat(store, lock, ttl=2.0, interval=0.02) as beat:
            for n in (1, 2, 3):
                terminate(pg_admin, app_name)
                wait_for(lambda n=n: store.reconnects >= n, f"reconnect {n}")  # type: ignore[misc]
                renewed = beat.lock.expires
                wait_for(lambda r=renewed: beat.lock.expires > r, "a renewal after it")  # type: ignore[misc]
            beat.check()
            believed = beat.lock.expires  # read first: the heartbeat renews every 20 ms
            held = other.get_lock(LOCK)
            assert held is not None and held.holder == ME.name
            assert held.expires >= believed
        store.release(LOCK, ME.name)

