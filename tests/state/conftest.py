"""Fixtures that run every state-store test against real SQLite and real PostgreSQL.

PostgreSQL comes from ``XCE_TEST_PG_URL`` (``eval "$(scripts/postgres.sh start)"``); each
test gets its own schema, selected through the URL's ``search_path`` option, so tests
are isolated and may run in parallel. Without a server the PostgreSQL half fails under
CI=true (a missing server must be noticed there) and is skipped elsewhere.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from reconciler.state import StateStore
from tests.state.targets import Target, pg_base_url, with_options


@pytest.fixture(scope="session")
def pg_admin() -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
    with psycopg.connect(pg_base_url(), autocommit=True) as conn:
        yield conn


@pytest.fixture
def pg_target(pg_admin: psycopg.Connection[tuple[Any, ...]]) -> Iterator[Target]:
    schema = f"xce_t_{secrets.token_hex(6)}"
    pg_admin.execute(f"CREATE SCHEMA {schema}")
    try:
        yield Target("postgresql", with_options(pg_base_url(), options=f"-csearch_path={schema}"))
    finally:
        pg_admin.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def sqlite_target(tmp_path: Path) -> Target:
    return Target("sqlite", str(tmp_path / "state.db"))


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def target(request: pytest.FixtureRequest) -> Target:
    name = "pg_target" if request.param == "postgresql" else "sqlite_target"
    result: Target = request.getfixturevalue(name)
    return result


@pytest.fixture
def store(target: Target) -> Iterator[StateStore]:
    with target.open() as opened:
        yield opened
