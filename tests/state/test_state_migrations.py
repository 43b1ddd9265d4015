"""The schema migrates itself in place, exactly once, and refuses a store from the future."""

from __future__ import annotations

import hashlib
from importlib import resources
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion

from compiler.cli.problem_render import render_text
from reconciler.state import Holder, StateError
from reconciler.state.migrations import VERSION_TABLE, latest_version, migrations, split
from tests.state.targets import WORKERS, Target

LATEST = 12


def build_version_1(target: Target) -> None:
    """A store as the first release left it: schema v1, a held lock, a run and a done op."""
    target.raw(VERSION_TABLE)
    for statement in migrations(target.backend)[0].statements:
        target.raw(statement)
    target.raw("INSERT INTO schema_version (version, applied) VALUES (1, 0)")
    target.raw(
        "INSERT INTO locks (name, holder, host, job_id, acquired, expires) "
        "VALUES ('apply/east', 'old-runner', 'ci-1', '77', 100, 4102444800)"
    )
    target.raw(
        "INSERT INTO runs (run_id, plan_digest, holder, started, finished, status) "
        "VALUES ('r1', 'sha256:p', 'old-runner', 100, 200, 'interrupted')"
    )
    target.raw(
        "INSERT INTO journal (op_id, run_id, action, entry_id, provider, status, attempts) "
        "VALUES ('op-1', 'r1', 'create', 'volume/shared', 'fs', 'done', 1)"
    )


def test_both_backends_have_the_same_versions() -> None:
    assert [m.version for m in migrations("sqlite")] == [
        m.version for m in migrations("postgresql")
    ]
    assert latest_version("sqlite") == latest_version("postgresql") == LATEST


def test_released_migrations_never_change(snapshot: SnapshotAssertion) -> None:
    """A store already at version N never reruns step N: editing it would fork the schema."""
    folder = resources.files("reconciler.state.migrations")
    digests = {
        item.name: hashlib.sha256(item.read_bytes()).hexdigest()[:16]
        for item in sorted(folder.iterdir(), key=lambda i: i.name)
        if item.name.endswith(".sql")
    }
    assert digests == snapshot


def test_split_drops_comments_and_empty_statements() -> None:
    assert split("-- a comment\nCREATE TABLE a (x TEXT);\n\n;CREATE INDEX i ON a (x);\n") == (
        "CREATE TABLE a (x TEXT)",
        "CREATE INDEX i ON a (x)",
    )


def test_new_store_gets_every_version_once(target: Target) -> None:
    with target.open() as store:
        assert store.schema_version() == LATEST
    with target.open() as store:  # reopening migrates nothing
        assert store.schema_version() == LATEST
    rows = target.raw("SELECT version FROM schema_version ORDER BY version")
    assert [r[0] for r in rows] == list(range(1, LATEST + 1))


def test_version_1_store_is_migrated_in_place(target: Target) -> None:
    build_version_1(target)
    with target.open() as store:
        assert store.schema_version() == LATEST
        # the old rows are intact and still mean the same
        lock = store.get_lock("apply/east")
        assert lock is not None and (lock.holder, lock.job_id) == ("old-runner", "77")
        assert store.done_op_ids("sha256:p") == {"op-1"}
        with pytest.raises(StateError, match="held by old-runner"):
            store.acquire("apply/east", Holder("new-runner", "ci-2"), ttl=60)
        # and the new tables work
        store.set_applied("east", "sha256:d", "abc")
        assert store.get_applied("east") is not None
        store.record_drift("east", {"missing": 1})
        assert len(store.drift_history("east")) == 1
        assert store.in_doubt("r") == []  # the done op is not in doubt
        store.record_plan("east", "sha256:d", "abc", b"plan")
        assert store.pending_plan("east", "sha256:d") is not None


def test_store_newer_than_the_code_is_refused(target: Target, snapshot: SnapshotAssertion) -> None:
    with target.open() as store:
        label = store.label
    newer = LATEST + 1
    target.raw(f"INSERT INTO schema_version (version, applied) VALUES ({newer}, 0)")
    with pytest.raises(StateError) as caught:
        target.open()
    assert caught.value.code == "XCE803"
    text = render_text(caught.value.problems).replace(label, "<store>")
    assert f"version {newer}" in text and f"supports ({LATEST})" in text
    assert text == snapshot
    # refusing changed nothing
    rows = target.raw("SELECT max(version) FROM schema_version")
    assert rows[0][0] == newer


def test_failed_migration_is_rolled_back(target: Target) -> None:
    build_version_1(target)
    target.raw("CREATE TABLE applied (site TEXT)")  # someone else's table in the way
    with pytest.raises(StateError) as caught:
        target.open()
    assert caught.value.code == "XCE804"
    assert "version 2" in caught.value.problems[0].message
    assert target.raw("SELECT max(version) FROM schema_version")[0][0] == 1
    # nothing of step 2 is left half-done
    drift = "SELECT count(*) FROM drift_history"
    with pytest.raises(Exception, match="drift_history"):
        target.raw(drift)


def test_another_tools_schema_version_table_is_not_taken_for_ours(target: Target) -> None:
    target.raw("CREATE TABLE schema_version (version TEXT, installed_rank INTEGER)")
    target.raw("INSERT INTO schema_version VALUES ('1.2', 1)")
    with pytest.raises(StateError) as caught:
        target.open()
    assert caught.value.code == "XCE805"
    assert "'1.2'" in caught.value.problems[0].message


def _open_fresh(target: Target, barrier: Any, results: Any) -> None:
    barrier.wait(timeout=30)
    try:
        with target.open() as store:
            results.put(store.schema_version())
    except StateError as err:
        results.put(str(err))


def test_runners_opening_a_new_store_at_once_migrate_it_once(target: Target) -> None:
    processes = 4
    barrier, results = WORKERS.Barrier(processes), WORKERS.Queue()
    workers = [
        WORKERS.Process(target=_open_fresh, args=(target, barrier, results))
        for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=60) for _ in range(processes)]
    for worker in workers:
        worker.join(timeout=30)
    assert outcomes == [LATEST] * processes
    rows = target.raw("SELECT version FROM schema_version ORDER BY version")
    assert [r[0] for r in rows] == list(range(1, LATEST + 1))
