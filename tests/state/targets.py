"""Store locations for tests, shared by the fixtures, the tests and their worker processes."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import secrets
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
import pytest

from reconciler.state import StateStore, open_store

# How a test starts the processes that race on one store: never a plain fork of the test's
# process, which may run threads by then (a PostgreSQL pool, a server double) — Python 3.12+
# warns that such a fork may deadlock, and 3.14 makes forkserver the default on Linux. Their
# targets are module-level functions and their arguments picklable (``Target``). The server
# imports what the test modules need once, so a worker starts in milliseconds, as a fork did.
WORKERS = multiprocessing.get_context("forkserver")
WORKERS.set_forkserver_preload(["pytest", "syrupy", "psycopg", "compiler.cli.problem_render",
                                "compiler.cli.runner", "reconciler.state", "tests.state.targets"])


@dataclass(frozen=True)
class Target:
    """A fresh, empty store location, and a raw driver connection to build old schemas."""

    backend: str  # "sqlite" or "postgresql"
    url: str  # what --state would say

    def open(self) -> StateStore:
        return open_store(self.url, Path("/nonexistent/unused.db"), env={})

    def raw(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement outside the store (autocommit), as an operator or old code would."""
        if self.backend == "sqlite":
            with closing(sqlite3.connect(self.url, isolation_level=None)) as conn:
                return conn.execute(sql, params).fetchall()
        with psycopg.connect(self.url, autocommit=True) as pg:
            cur = pg.execute(sql.replace("?", "%s"), params)
            return cur.fetchall() if cur.description else []


PG_ENV = "XCE_TEST_PG_URL"


def pg_base_url() -> str:
    url = os.environ.get(PG_ENV)
    if url:
        return url
    reason = f'{PG_ENV} is not set; start a server with: eval "$(scripts/postgres.sh start)"'
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"PostgreSQL tests cannot run under CI: {reason}", pytrace=False)
    pytest.skip(reason)


def with_options(url: str, **params: str) -> str:
    query = "&".join(f"{k}={quote(v, safe='')}" for k, v in params.items())
    return f"{url}{'&' if '?' in url else '?'}{query}"


@contextlib.contextmanager
def pg_schema(prefix: str, base: str | None = None) -> Iterator[str]:
    """A fresh schema of the test server (``base``, else ``XCE_TEST_PG_URL``), dropped at the
    end; the store URL that selects it."""
    base = base or pg_base_url()
    schema = f"{prefix}_{secrets.token_hex(6)}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    try:
        yield with_options(base, options=f"-csearch_path={schema}")
    finally:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")
