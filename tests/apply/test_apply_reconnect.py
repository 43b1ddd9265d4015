"""A long apply rides out dropped PostgreSQL connections, and stops if it may have been
superseded meanwhile (issue 8 §8).

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
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest

import reconciler.cli.plan as plan_cli
from reconciler.apply.locking import lock_name
from reconciler.state import Holder, OpStatus, StateStore
from tests.apply.conftest import Site
from tests.apply.crashing import Crashing, example_site, exec_site, start_apply
from tests.state.targets import Target, with_options

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

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


def drop_connection(admin: Admin, app_name: str) -> None:
    """End the apply's backend; while it is reconnecting there is none: wait for it."""
    deadline = time.monotonic() + 10
    while not admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE application_name = %s", (app_name,)).fetchall():
        assert time.monotonic() < deadline, "the apply has no connection to end"
        time.sleep(0.005)


def wait_done(store: StateStore, digest: str, count: int, log: Path) -> None:
    deadline = time.monotonic() + 60
    while len(store.done_op_ids(digest)) < count:
        assert time.monotonic() < deadline, f"seed {SEED}: stuck: {log.read_text()[-3000:]}"
        time.sleep(0.005)


def finished(crashing: Crashing, site: Site, digest: str, ops: set[str]) -> None:
    """Every op done in the journal, applied exactly once, and nothing left to plan."""
    with site.store() as store:
        journal = store.journal(plan_digest=digest)
        assert Counter(e.status for e in journal) == {OpStatus.DONE: len(ops)}, f"seed {SEED}"
    assert Counter(crashing.ledger()) == Counter(ops), f"seed {SEED}: each op exactly once"
    assert plan_cli.main(crashing.plan_argv) == 0


def test_a_dropped_connection_does_not_stop_a_long_apply(
        pg_site: Site, pg_target: Target, pg_admin: Admin, app_name: str) -> None:
    print(f"XCE_CRASH_SEED={SEED}")
    rng = random.Random(f"{SEED}/reconnect")
    crashing = example_site(pg_site)
    digest, ops = crashing.ops()
    points = sorted(rng.sample(range(1, len(ops) - 200), 4))
    log = pg_site.root / "apply.log"
    proc = start_apply(crashing.argv, log)
    with pg_target.open() as watcher:  # not under app_name: never ended itself
        for point in points:
            wait_done(watcher, digest, point, log)
            drop_connection(pg_admin, app_name)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, f"seed {SEED}: {log.read_text()[-3000:]}"
    report = json.loads(out)
    assert report["counts"]["done"] == len(ops)
    (notice,) = [n for n in report["notices"] if n["code"] == "XCE828"]
    assert "lost and opened again" in notice["message"]
    finished(crashing, pg_site, digest, ops)


def test_an_apply_cut_off_while_another_took_over_stops_and_resumes_later(
        pg_site: Site, pg_target: Target, pg_admin: Admin, app_name: str) -> None:
    """Cut off while its lease was taken over (it expired, or an operator forced it), the
    apply must not go on when its connection comes back: another runner owns the site."""
    print(f"XCE_CRASH_SEED={SEED}")
    rng = random.Random(f"{SEED}/taken-over")
    crashing = exec_site(pg_site)
    digest, ops = crashing.ops()
    log = pg_site.root / "apply.log"
    proc = start_apply([*crashing.argv, "--parallelism", "2"], log)
    lock = lock_name("test")
    with pg_target.open() as thief:
        wait_done(thief, digest, rng.randrange(1, len(ops) // 2), log)
        thief.force_release(lock)
        thief.acquire(lock, THIEF, 60)
        thief.next_epoch(lock)
        drop_connection(pg_admin, app_name)
        proc.communicate(timeout=60)
        assert proc.returncode == 1
        assert "error[XCE807]" in log.read_text()
        stopped_at = Counter(crashing.ledger())
        assert len(stopped_at) < len(ops)
        time.sleep(0.3)
        assert Counter(crashing.ledger()) == stopped_at  # nothing runs on behind its back
        thief.release(lock, THIEF.name)
    rerun = start_apply(crashing.argv, log)
    rerun.communicate(timeout=120)
    assert rerun.returncode == 0, f"seed {SEED}: {log.read_text()[-3000:]}"
    finished(crashing, pg_site, digest, ops)
