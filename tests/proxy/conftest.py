"""Fixtures of the proxy system tests: a proxied copy of the example site with its proxies
as real processes (tests/proxy/harness.py), on real PostgreSQL or SQLite.

PostgreSQL comes from ``XCE_TEST_PG_URL`` (``eval "$(scripts/postgres.sh start)"``): one
database, a schema of its own per cluster. Every cluster's proxies get canary secrets in
their own environment only (``Cluster.canaries``), which no row, log or output may show.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.apply.events import Doorbell
from tests.proxy.harness import DEFAULT_TIMINGS, TOKEN_ENV, Cluster, Timings, proxied_site
from tests.state.targets import pg_schema

SCHEMA = "xce_proxy"  # each cluster's PostgreSQL schema: xce_proxy_<random>

PROXIES = ("proxy-a", "proxy-b")


@contextlib.contextmanager
def cluster_at(root: Path, state_url: str, *, proxy_state_url: str | None = None,
               timings: Timings = DEFAULT_TIMINGS) -> Iterator[Cluster]:
    """A proxied example site under ``root`` and its proxies (none started yet; all stopped
    at the end). Each proxy's environment holds a canary API token of its own; the license
    credential file under ``root/secrets`` (the proxy hosts' /etc/xce/secrets) one more."""
    secret_dir = root / "secrets"
    secret_dir.mkdir(parents=True)
    flexlm = f"canary-flexlm-{secrets.token_hex(8)}"
    (secret_dir / "flexlm").write_text(flexlm + "\n")
    secret_dir.chmod(0o700)
    site = proxied_site(root / "site", secret_dir, timings)
    env = {name: {TOKEN_ENV: f"canary-{name}-{secrets.token_hex(8)}"} for name in PROXIES}
    with Doorbell(root / "events") as bell:
        cluster = Cluster(root, site, state_url, proxy_state_url or state_url, bell, env,
                          canaries=[flexlm, *(e[TOKEN_ENV] for e in env.values())])
        try:
            yield cluster
        finally:
            cluster.stop_all()


@pytest.fixture
def sqlite_cluster(tmp_path: Path) -> Iterator[Cluster]:
    with cluster_at(tmp_path, str(tmp_path / "state.sqlite")) as cluster:
        yield cluster


@pytest.fixture
def pg_cluster(tmp_path: Path) -> Iterator[Cluster]:
    with pg_schema(SCHEMA) as url, cluster_at(tmp_path, url) as cluster:
        yield cluster


def any_cluster(request: pytest.FixtureRequest) -> Any:
    """The cluster fixture a parametrized test names: "sqlite" or "postgresql"."""
    return request.getfixturevalue("pg_cluster" if request.param == "postgresql"
                                   else "sqlite_cluster")
