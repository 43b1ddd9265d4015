"""Choosing and opening a store: clear errors naming the store, never its password."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from syrupy.assertion import SnapshotAssertion

from compiler.cli.problem_render import render_text
from compiler.cli.runner import run_cli
from reconciler.state import (
    ENV_URL,
    Lock,
    LockHeld,
    LockLost,
    StateError,
    current_holder,
    open_store,
    redact,
)
from reconciler.state.errors import bad_url, epoch_moved
from reconciler.state.holder import pid_in_this_scope, process_scope
from reconciler.state.migrations import latest_version
from reconciler.state.urls import PostgresTarget, SqliteTarget, parse_target
from tests.state.targets import WORKERS, pg_base_url

SECRET = "s3cr3t-Pa55"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("state.db", Path("state.db")),
        ("/var/lib/xce/state.db", Path("/var/lib/xce/state.db")),
        ("site-config/.xce/state:1.db", Path("site-config/.xce/state:1.db")),
        ("sqlite:///var/lib/xce/state.db", Path("/var/lib/xce/state.db")),
        ("sqlite:relative/state.db", Path("relative/state.db")),
        ("SQLITE:///a%20b.db", Path("/a b.db")),
        ("C:\\xce\\state.db", Path("C:\\xce\\state.db")),
    ],
)
def test_paths_and_sqlite_urls_open_sqlite(text: str, expected: Path) -> None:
    assert parse_target(text) == SqliteTarget(expected)


@pytest.mark.parametrize(
    ("url", "label"),
    [
        (
            f"postgresql://xce:{SECRET}@db.example:5433/state",
            "postgresql://xce@db.example:5433/state",
        ),
        (f"postgres://xce:{SECRET}@db.example/state", "postgres://xce@db.example/state"),
        (
            f"postgresql://xce@db.example/state?sslmode=require&password={SECRET}",
            "postgresql://xce@db.example/state",
        ),
        ("postgresql://[::1]:5432/state", "postgresql://[::1]:5432/state"),
        ("postgresql:///state", "postgresql://localhost/state"),
    ],
)
def test_postgres_urls_are_labelled_without_secrets(url: str, label: str) -> None:
    target = parse_target(url)
    assert isinstance(target, PostgresTarget)
    assert target.label == label == redact(url)
    assert target.url == url


@pytest.mark.parametrize(
    "text", ["sqlite://host/state.db", "sqlite:", f"mysql://xce:{SECRET}@db/state"]
)
def test_unknown_urls_are_refused_without_secrets(text: str) -> None:
    with pytest.raises(StateError) as caught:
        parse_target(text)
    assert caught.value.code == "XCE800"
    assert SECRET not in render_text(caught.value.problems)


def test_argument_then_environment_then_default(tmp_path: Path) -> None:
    default, from_env, given = tmp_path / "d.db", tmp_path / "e.db", tmp_path / "g.db"
    with open_store(None, default, env={}) as store:
        assert store.label == str(default)
    with open_store(None, default, env={ENV_URL: str(from_env)}) as store:
        assert store.label == str(from_env)
    with open_store(str(given), default, env={ENV_URL: str(from_env)}) as store:
        assert store.label == str(given)
    assert default.exists() and from_env.exists() and given.exists()


def test_sqlite_store_is_created_with_its_folder_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "site" / ".xce" / "state.db"
    with open_store(None, path, env={}) as store:
        store.next_epoch("x")
    assert path.exists()
    assert path.with_name("state.db-wal").exists() or path.read_bytes()[18:20] == b"\x02\x02"


def _open_new_file(path: Path, barrier: Any, results: Any) -> None:
    barrier.wait(timeout=30)
    try:
        with open_store(str(path), path, env={}) as store:
            results.put(store.schema_version())
    except StateError as err:
        results.put(str(err))


def test_runners_opening_one_new_sqlite_file_at_once_all_open_it(tmp_path: Path) -> None:
    """Switching a new file to WAL does not wait for the busy timeout by itself: without a
    retry about one round in five had a runner fail with "database is locked"."""
    for n in range(20):
        barrier, results = WORKERS.Barrier(4), WORKERS.Queue()
        workers = [WORKERS.Process(target=_open_new_file,
                                args=(tmp_path / f"{n}.db", barrier, results)) for _ in range(4)]
        for worker in workers:
            worker.start()
        outcomes = [results.get(timeout=60) for _ in workers]
        for worker in workers:
            worker.join(timeout=30)
        assert outcomes == [latest_version("sqlite")] * 4


def test_sqlite_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("these are my notes, not a database\n" * 50)
    with pytest.raises(StateError) as caught:
        open_store(str(path), tmp_path / "unused.db", env={})
    assert caught.value.code == "XCE805"
    assert path.read_text().startswith("these are my notes")


def test_sqlite_path_that_cannot_be_created(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(StateError) as caught:
        open_store(str(blocker / "state.db"), tmp_path / "unused.db", env={})
    assert caught.value.code == "XCE801"
    assert caught.value.problems[0].subject == str(blocker / "state.db")


def test_unreachable_server_is_one_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"postgresql://xce:{SECRET}@127.0.0.1:1/state?connect_timeout=3"

    def body() -> int:
        open_store(url, Path("unused.db"), env={})
        return 0

    assert run_cli("xce-apply", body) == 1
    err = capsys.readouterr().err
    assert err.startswith("postgresql://xce@127.0.0.1:1/state: error[XCE801]: cannot open")
    assert SECRET not in err and "Traceback" not in err


@pytest.mark.postgres
def test_server_refusing_the_user_is_one_clear_error() -> None:
    base = psycopg.conninfo.conninfo_to_dict(pg_base_url())
    url = f"postgresql://nobody:{SECRET}@{base['host']}:{base['port']}/{base['dbname']}"
    with pytest.raises(StateError) as caught:
        open_store(url, Path("unused.db"), env={})
    assert caught.value.code == "XCE801"
    text = render_text(caught.value.problems)
    assert 'role "nobody" does not exist' in text
    assert SECRET not in text


def test_holder_names_the_ci_job() -> None:
    gitlab = current_holder({"CI_JOB_ID": "123", "GITHUB_RUN_ID": "9"})
    github = current_holder({"GITHUB_RUN_ID": "9"})
    local = current_holder({})
    assert (gitlab.job_id, github.job_id, local.job_id) == ("123", "9", None)
    assert gitlab.name != current_holder({}).name  # unique per runner, even in one process
    assert f"@{local.host}:" in local.name


def test_a_holders_pid_counts_only_in_its_own_pid_namespace() -> None:
    """Containers sharing a host name have pids of their own: another one's pid 7 says
    nothing about our pid 7."""
    me = current_holder({})
    assert pid_in_this_scope(me.name) == os.getpid()
    assert me.name.split("/")[-1].startswith(process_scope())
    other_namespace = ("0" if process_scope()[0] != "0" else "1") + process_scope()[1:]
    assert pid_in_this_scope(f"ci@{me.host}:7/{other_namespace}a1b2c3") is None
    assert pid_in_this_scope(f"ci@{me.host}:7/a1b2c3") is None  # no scope: never trusted


def _at(hour: int) -> datetime:
    return datetime(2030, 5, 4, hour, 0, tzinfo=UTC)


def test_messages_read_well(snapshot: SnapshotAssertion) -> None:
    """The texts a person sees when a run cannot take or keep its lock."""
    lock = Lock("apply/hpc-east", "ci@runner-7:311/a1b2c3", "runner-7", "4711", _at(9), _at(10))
    errors: list[StateError] = [
        LockHeld(lock, "postgresql://xce@db:5432/state", waited=0),
        LockHeld(lock, "postgresql://xce@db:5432/state", waited=30),
        LockLost("apply/hpc-east", "ci@runner-3:80/ffffff", lock, "/srv/xce/state.db"),
        LockLost("apply/hpc-east", "ci@runner-3:80/ffffff", None, "/srv/xce/state.db"),
        LockLost("apply/hpc-east", lock.holder, lock, "postgresql://xce@db:5432/state"),
        epoch_moved("postgresql://xce@db:5432/state", "apply/hpc-east", 7, 8),
        bad_url("mysql://xce@db/state", "unknown scheme 'mysql'"),
    ]
    assert "\n".join(render_text(e.problems) for e in errors) == snapshot
