"""A long apply rides out dropped PostgreSQL connections, and stops if it may have been
superseded meanwhile (issue 8 §8, issue 19 §6).

The backend is ended at every phase boundary of an apply (the lock, the epoch, recovery,
the staleness check's inventory, the run's start, the journal, the applied record, the
release, the heartbeat's renewal), twice in a row each, so the reconnect itself is cut too:
driven by the statements the store sends, never by timing.

The server ends the apply's backend (``pg_terminate_backend`` from a second connection,
as a failover or a pooler restart does) several times at random points of a REAL
``xce-apply`` of the example site (3,297 actions), and once while another runner takes the
lock over (a small site: the apply stops at once). The seed is printed;
``XCE_CRASH_SEED=<seed>`` repeats a run's points.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import subprocess
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, cast

import psycopg
import pytest

import reconciler.cmds.plan as plan_cli
from reconciler.apply import ApplyOptions, ApplyReport, FreshPlan, apply
from reconciler.plan.file import SavedPlan
from reconciler.state import Holder, OpStatus, RunStatus, StateStore
from reconciler.state.postgres_backend import PostgresBackend
from reconciler.state.runs import lock_name
from reconciler.state.sql_store import SqlStore
from reconciler.state.urls import PostgresTarget, parse_target
from tests.apply.conftest import FAST_RETRY, Site, volume_site
from tests.apply.crashing import Crashing, example_site, exec_site, start_apply
from tests.apply.events import Doorbell, all_calls_ended, poll
from tests.state.targets import Target, with_options

pytestmark = pytest.mark.postgres

SEED = int(os.environ.get("XCE_CRASH_SEED") or random.randrange(1 << 32))
THIEF = Holder("ci@runner-9:99/ffff", "runner-9")
Admin = psycopg.Connection[tuple[Any, ...]]


@pytest.fixture
def app_name() -> str:
    return f"xce-apply-{secrets.token_hex(4)}"


@pytest.fixture
def pg_site(tmp_path: Path, pg_target: Target, app_name: str) -> Site:
    """A site whose state store's connections carry ``app_name``, so a test can end them."""
    return Site(tmp_path, Target("postgresql",
                                 with_options(pg_target.url, application_name=app_name)))


@pytest.fixture
def bell(tmp_path: Path) -> Iterator[Doorbell]:
    """Rung by each progress line of an apply started with it."""
    with Doorbell(tmp_path / "events") as ringing:
        yield ringing


def drop_connection(admin: Admin, app_name: str) -> None:
    """End the apply's backend; while it is reconnecting there is none: wait for it (a
    backend appearing is no event a test can wait on: ``poll``, at most 10 s)."""
    poll(lambda: bool(admin.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
        (app_name,)).fetchall()), what="a connection of the apply to end", tries=2000)


def wait_done(bell: Doorbell, proc: subprocess.Popen[str], store: StateStore, digest: str,
              count: int, log: Path) -> None:
    """Until ``count`` ops are done, checked at each progress line of ``proc``."""
    done = bell.wait(lambda: len(store.done_op_ids(digest)) >= count, proc, f"{count} ops done")
    assert done and proc.poll() is None, f"seed {SEED}: stuck: {log.read_text()[-3000:]}"


def finished(crashing: Crashing, site: Site, digest: str, ops: set[str]) -> None:
    """Every op done in the journal, applied exactly once, and nothing left to plan."""
    with site.store() as store:
        journal = store.journal(plan_digest=digest)
        assert Counter(e.status for e in journal) == {OpStatus.DONE: len(ops)}, f"seed {SEED}"
    assert Counter(crashing.ledger()) == Counter(ops), f"seed {SEED}: each op exactly once"
    assert plan_cli.main(crashing.plan_argv) == 0


@pytest.mark.slow
def test_a_dropped_connection_does_not_stop_a_long_apply(
        pg_site: Site, pg_target: Target, pg_admin: Admin, app_name: str, bell: Doorbell
) -> None:
    print(f"XCE_CRASH_SEED={SEED}")
    rng = random.Random(f"{SEED}/reconnect")
    crashing = example_site(pg_site)
    digest, ops = crashing.ops()
    points = sorted(rng.sample(range(1, len(ops) - 200), 4))
    log = pg_site.root / "apply.log"
    proc = start_apply(crashing.argv, log, bell)
    with pg_target.open() as watcher:  # not under app_name: never ended itself
        for point in points:
            wait_done(bell, proc, watcher, digest, point, log)
            drop_connection(pg_admin, app_name)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, f"seed {SEED}: {log.read_text()[-3000:]}"
    report = json.loads(out)
    assert report["counts"]["done"] == len(ops)
    (notice,) = [n for n in report["notices"] if n["code"] == "XCE828"]
    assert "lost and opened again" in notice["message"]
    finished(crashing, pg_site, digest, ops)


@pytest.mark.slow
def test_an_apply_cut_off_while_another_took_over_stops_and_resumes_later(
        pg_site: Site, pg_target: Target, pg_admin: Admin, app_name: str, bell: Doorbell
) -> None:
    """Cut off while its lease was taken over (it expired, or an operator forced it), the
    apply must not go on when its connection comes back: another runner owns the site."""
    print(f"XCE_CRASH_SEED={SEED}")
    rng = random.Random(f"{SEED}/taken-over")
    crashing = exec_site(pg_site)
    digest, ops = crashing.ops()
    log = pg_site.root / "apply.log"
    proc = start_apply([*crashing.argv, "--parallelism", "2"], log, bell)
    lock = lock_name("test")
    with pg_target.open() as thief:
        wait_done(bell, proc, thief, digest, rng.randrange(1, len(ops) // 2), log)
        thief.force_release(lock)
        thief.acquire(lock, THIEF, 60)
        thief.next_epoch(lock)
        drop_connection(pg_admin, app_name)
        proc.communicate(timeout=60)
        assert proc.returncode == 1
        assert "error[XCE807]" in log.read_text()
        stopped_at = Counter(crashing.ledger())
        assert len(stopped_at) < len(ops)
        all_calls_ended(pg_site.home)  # every provider process it started has ended
        assert Counter(crashing.ledger()) == stopped_at  # nothing ran on behind its back
        thief.release(lock, THIEF.name)
    rerun = start_apply(crashing.argv, log)
    rerun.communicate(timeout=120)
    assert rerun.returncode == 0, f"seed {SEED}: {log.read_text()[-3000:]}"
    finished(crashing, pg_site, digest, ops)


# every store method an apply calls, by phase; each must ride out its backend's end
PHASES = {
    "lock": ("acquire", "next_epoch"),
    "recovery": ("in_doubt", "runs"),
    "inventory": ("provider_generations", "record_generations"),
    "run start": ("done_op_ids", "start_run"),
    "journal": ("journal_add", "journal_round"),
    "applied record": ("finish_run", "set_applied"),
    "release": ("release",),
    "heartbeat": ("renew",),
}
CUTS = 2  # per method: the second one ends the reconnect's own check
LEASE_S = 10.0  # as in the issue: renewed every 3.3 s, enough for a busy machine's reconnects


class Severing(PostgresBackend):
    """Ends its own server backend (as a failover or an admin does) right before a chosen
    statement of each store method named in ``cuts``: that statement then meets a dead
    connection. The method is told per thread by ``Phased`` (the heartbeat has its own).
    A statement sent outside BEGIN … COMMIT (a journal round) is a transaction of its own:
    its start and its commit are both right before it."""

    def __init__(self, target: PostgresTarget, end: Callable[[], bool], at: str,
                 methods: Mapping[str, int]) -> None:
        super().__init__(target)
        self.end, self.at, self.left = end, at, dict(methods)
        self.method = threading.local()
        self.severed: Counter[str] = Counter()
        self.cut = threading.Event()  # set at each cut, for a test waiting on one
        self.open = False  # inside BEGIN … COMMIT (the store serialises its statements)

    def execute(self, sql: str, params: Any = ()) -> int:
        self._sever(sql)
        return super().execute(sql, params)

    def query(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        self._sever(sql)
        return super().query(sql, params)

    def _sever(self, sql: str) -> None:
        alone = not self.open and not sql.startswith(("BEGIN", "COMMIT", "ROLLBACK"))
        self.open = sql.startswith("BEGIN") or (self.open and not sql.startswith(
            ("COMMIT", "ROLLBACK")))
        method = getattr(self.method, "name", None)
        if method and self.left.get(method, 0) > 0 and (sql.startswith(self.at) or alone) \
                and self.end():
            self.left[method] -= 1
            self.severed[method] += 1
            self.cut.set()


class Phased:
    """The store as the apply sees it, telling the backend which method each thread is in."""

    def __init__(self, store: SqlStore, backend: Severing) -> None:
        self._store, self._backend = store, backend

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._store, name)
        if name.startswith("_") or not callable(found):
            return found

        def call(*args: Any, **kwargs: Any) -> Any:
            local = self._backend.method
            outer = getattr(local, "name", None)
            local.name = outer or name  # a method's own inner calls count as it
            try:
                return found(*args, **kwargs)
            finally:
                local.name = outer

        return call


def ender(admin: Admin, app_name: str) -> Callable[[], bool]:
    """End the backend under ``app_name`` and wait until it is gone (at most 5 s); False
    when there is none (the store's connection is already lost)."""
    def end() -> bool:
        ended = admin.execute("SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity "
                              "WHERE application_name = %s", (app_name,)).fetchall()
        return ended == [(True,)]
    return end


@pytest.mark.parametrize(("at", "source"), [("BEGIN", "saved plan"), ("COMMIT", "auto-approve")])
def test_a_backend_ended_at_every_phase_boundary_never_ends_the_apply(
        pg_site: Site, pg_admin: Admin, app_name: str, source: str, at: str) -> None:
    """Issue 19 §6: one phase (the inventory the staleness check records) ended the run with
    XCE802 instead of reconnecting. A call held in the provider waits until the heartbeat's
    renewal was cut too, so every phase is cut in every run, whatever the machine's speed."""
    pg_site.write(volume_site(volumes=1, users=2))
    pg_site.configure(hold=["volume-dir/v1/u01"])
    plan = pg_site.plan()
    pg_site.save(plan)  # the store exists, with its origin, as xce-plan --out leaves it
    methods = {m: CUTS for names in PHASES.values() for m in names}
    target = parse_target(pg_site.target.url)
    assert isinstance(target, PostgresTarget)
    backend = Severing(target, ender(pg_admin, app_name), at, methods)
    store = SqlStore(backend)
    released = threading.Thread(target=lambda: (_renewed(backend), pg_site.let_go()))
    released.start()
    try:
        chosen = SavedPlan(plan, False) if source == "saved plan" else FreshPlan()
        report = apply_with(pg_site, chosen, cast(StateStore, Phased(store, backend)))
    finally:
        pg_site.let_go()
        released.join()
        store.close()
    assert report.stopped is None, report.stopped
    assert report.result == "applied", [o.message for o in report.outcomes if not o.ok]
    assert sorted(pg_site.executed()) == sorted(a.entry for a in plan.actions)
    missed = {phase: [m for m in names if backend.severed[m] < CUTS]
              for phase, names in PHASES.items()}
    assert not any(missed.values()), f"phases never cut: {missed}"
    (notice,) = [n for n in report.notices if n.code == "XCE828"]
    assert "lost and opened again" in notice.message  # the release's come after the report
    with pg_site.store() as after:
        assert after.get_lock(lock_name("test")) is None
        run = after.get_run(report.run_id or "")
        assert run is not None and run.status is RunStatus.SUCCEEDED
        assert after.get_applied("test") is not None


def _renewed(backend: Severing) -> None:
    """Wait until the heartbeat's renewal was cut as often as planned (woken by each cut),
    or no cut came for 30 s."""
    while backend.severed["renew"] < CUTS and backend.cut.wait(30):
        backend.cut.clear()


def apply_with(site: Site, source: SavedPlan | FreshPlan, store: StateStore) -> ApplyReport:
    """Apply in this process with a short lease, so the heartbeat renews its lease while
    the call held in the provider waits."""
    return apply(site.desired(), source, store, site.workdir,
                 ApplyOptions(retry=FAST_RETRY, lock_ttl=LEASE_S))

