"""The site's lock: a second apply fails fast naming the holder, or waits; xce-lock frees it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime

import pytest

from reconciler.cmds import apply as apply_cli
from reconciler.cmds import lock as lock_cli
from reconciler.state import Holder, Lock
from reconciler.state.holder import process_scope
from reconciler.state.runs import lock_name
from tests.apply.conftest import Site, volume_site

LOCK = lock_name("test")
OTHER = Holder("ci@runner-7:4242/abcdef", "runner-7", "4711")


def test_second_apply_fails_fast_naming_the_holder(site: Site,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    site.write(volume_site(volumes=1, users=1))
    plan_file = site.save(site.plan())
    with site.store() as store:
        store.acquire(LOCK, OTHER, ttl=60)
    started = time.monotonic()
    assert apply_cli.main(site.cli_args(str(plan_file))) == 1
    assert time.monotonic() - started < 3
    err = capsys.readouterr().err
    assert "XCE806" in err and "held by ci@runner-7:4242/abcdef" in err
    assert "(host runner-7, CI job 4711)" in err
    assert site.calls() == []


def test_apply_waits_for_the_lock_with_a_timeout(site: Site,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    site.write(volume_site(volumes=1, users=1))
    plan_file = site.save(site.plan())
    with site.store() as store:
        store.acquire(LOCK, OTHER, ttl=60)

    def finish_other_apply() -> None:
        time.sleep(0.8)
        with site.store() as other:
            other.release(LOCK, OTHER.name)

    releaser = threading.Thread(target=finish_other_apply)
    releaser.start()
    started = time.monotonic()
    rc = apply_cli.main(site.cli_args(str(plan_file), "--lock-timeout", "20"))
    releaser.join()
    assert rc == 0, capsys.readouterr().err
    assert time.monotonic() - started >= 0.8
    assert len(site.executed()) == 2


def test_apply_gives_up_after_the_timeout(site: Site,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    site.write(volume_site(volumes=1, users=0))
    with site.store() as store:
        store.acquire(LOCK, OTHER, ttl=60)
    assert apply_cli.main(site.cli_args("--auto-approve", "--lock-timeout", "0.4")) == 1
    assert "after waiting 0.4 s" in capsys.readouterr().err.replace("\n", " ")


def test_lock_of_a_dead_process_on_this_host_is_taken_over(site: Site) -> None:
    site.write(volume_site(volumes=1, users=0))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    gone = Holder(f"ci@{socket.gethostname()}:{dead.stdout.strip()}/{process_scope()}0a1b2c",
                  socket.gethostname())
    with site.store() as store:
        store.acquire(LOCK, gone, ttl=600)
    report = site.apply(site.plan())
    assert report.exit_code == 0
    (notice,) = [n for n in report.notices if n.code == "XCE826"]
    assert gone.name in notice.message


def test_lock_lost_during_the_run_stops_it(site: Site) -> None:
    site.write(volume_site(volumes=4, users=0), delay=0.3)
    plan = site.plan()

    def take_it_away() -> None:
        # Steal the lock once the first op is done, however slow the machine is.
        deadline = time.monotonic() + 30
        with site.store() as store:
            while time.monotonic() < deadline:
                runs = store.runs()
                if runs and any(j.status == "done" for j in store.journal(run_id=runs[0].run_id)):
                    break
                time.sleep(0.02)
            store.force_release(LOCK)
            store.acquire(LOCK, OTHER, ttl=60)

    thief = threading.Thread(target=take_it_away)
    thief.start()
    report = site.apply(plan, lock_ttl=0.3, parallelism=1)
    thief.join()
    assert report.stopped is not None and report.stopped.code == "XCE837"
    # The heartbeat that notices may fall between the thief's release and its acquire.
    message = report.stopped.message
    assert "held by ci@runner-7" in message or message.endswith("nobody holds it now"), message
    counts = report.counts()
    assert counts["done"] >= 1 and counts["skipped"] >= 1
    assert {o.code for o in report.outcomes if o.status == "skipped"} == {"XCE833"}
    assert report.exit_code == 1
    with site.store() as store:
        assert store.get_lock(LOCK).holder == OTHER.name  # type: ignore[union-attr]


def test_xce_lock_list_and_release(site: Site, capsys: pytest.CaptureFixture[str]) -> None:
    state = ["--state", site.target.url]
    assert lock_cli.main([*state, "list"]) == 0
    assert capsys.readouterr().out == "No locks are held.\n"
    with site.store() as store:
        store.acquire(LOCK, OTHER, ttl=60)
        store.acquire("apply/expired", Holder("old@gone:1/ffffff", "gone"), ttl=0.01)
    time.sleep(0.05)
    assert lock_cli.main([*state, "list", "--format", "json"]) == 0
    locks = {x["name"]: x for x in json.loads(capsys.readouterr().out)["locks"]}
    assert locks[LOCK]["state"] == "held" and locks[LOCK]["job_id"] == "4711"
    assert locks["apply/expired"]["state"] == "expired"
    assert lock_cli.main([*state, "list"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].split() == ["NAME", "STATE", "HOLDER", "HOST", "JOB", "ACQUIRED", "EXPIRES"]
    assert text[1].split()[:5] == ["apply/expired", "expired", "old@gone:1/ffffff", "gone", "-"]
    assert text[2].split()[:5] == [LOCK, "held", OTHER.name, "runner-7", "4711"]

    # an expired lease goes without --force; a live one needs it
    assert lock_cli.main([*state, "release", "apply/expired"]) == 0
    assert "Released lock 'apply/expired'" in capsys.readouterr().out
    assert lock_cli.main([*state, "release", LOCK]) == 1
    err = capsys.readouterr().err
    assert "XCE841" in err and f"xce-lock release --force {LOCK}" in err
    assert lock_cli.main([*state, "release", "--force", LOCK]) == 0
    assert lock_cli.main([*state, "release", LOCK]) == 1
    assert "XCE840" in capsys.readouterr().err
    with site.store() as store:
        assert store.list_locks() == []


def test_lock_state_of_a_dead_holder_here() -> None:
    now = datetime.now(UTC)
    here, scope = socket.gethostname(), process_scope()
    alive = lock_cli.state_of(_lock(f"me@{here}:{os.getppid()}/{scope}aaaaaa", here), now)
    assert alive == "held"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert lock_cli.state_of(_lock(f"me@{here}:{dead}/{scope}aaaaaa", here), now) == "dead"
    elsewhere = _lock(f"me@elsewhere:{dead}/{scope}aaaaaa", "elsewhere")
    assert lock_cli.state_of(elsewhere, now) == "held"
    # same host name, other pid namespace (a container with host networking): its pids
    # are not ours to check
    container = ("0" if scope[0] != "0" else "1") + scope[1:]
    assert lock_cli.state_of(_lock(f"me@{here}:{dead}/{container}aaaaaa", here), now) == "held"


def _lock(holder: str, host: str) -> Lock:
    now = datetime.now(UTC)
    return Lock(LOCK, holder, host, None, now, now.replace(year=now.year + 1))
