"""The state store out of reach for a while (issue 24): the proxies wait and say so, an apply
that cannot reach the store fails clearly, one that can waits for its queued calls, and
everything converges once the store is back.

The proxies reach PostgreSQL through a TCP relay the test cuts (``Forwarder``): stopping the
shared test server would cut every other test running beside this one. The relay refuses
connections while it is down, as a database host that went away does.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.apply.events import poll
from tests.proxy.conftest import SCHEMA, cluster_at
from tests.proxy.harness import SITE, Cluster, Forwarder
from tests.state.targets import pg_schema

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
PROXIES = ("proxy-a", "proxy-b")


def through(url: str, port: int) -> str:
    """``url`` with its host and port replaced by the relay's."""
    parts = urlsplit(url)
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{port}"))


@pytest.fixture
def relayed(tmp_path: Path) -> Iterator[tuple[Cluster, Forwarder]]:
    with pg_schema(SCHEMA) as url:
        parts = urlsplit(url)
        relay = Forwarder(parts.hostname or "127.0.0.1", parts.port or 5432)
        try:
            with cluster_at(tmp_path, url, proxy_state_url=through(url, relay.port)) as cluster:
                yield cluster, relay
        finally:
            relay.down()


def test_proxies_and_applies_wait_out_a_store_outage_then_converge(
        relayed: tuple[Cluster, Forwarder]) -> None:
    cluster, relay = relayed
    cluster.record_config()
    cluster.start(*PROXIES)
    providers = {"cloud-burst", "cpu-cache", "flexlm", "gpu-cache", "shared-fs"}

    def all_published() -> bool:  # by either proxy: a slow start leaves some to the standby
        with cluster.store() as store:
            return set(store.published_headers(SITE)) == providers

    cluster.wait(all_published, "every provider's inventory published")

    relay.down()
    for name in PROXIES:
        cluster.wait_event(name, "store-unreachable")
    assert all(cluster.proxy(name).running for name in PROXIES), "a proxy gave up"

    # an apply that cannot reach the store either: a clear error, nothing applied
    cut = cluster.run("xce-apply", str(cluster.site), "--auto-approve",
                      state=through(cluster.state_url, relay.port))
    assert cut.code == 1, str(cut)
    assert "Traceback" not in cut.out + cut.err
    assert re.search(r"state store|XCE8\d\d", cut.err), str(cut)

    # an apply that reaches the store queues the proxied calls and waits for them
    log = cluster.root / "apply.log"
    apply = cluster.spawn("xce-apply", str(cluster.site), "--auto-approve", log=log)

    def queued() -> bool:
        with cluster.store() as store:
            return sum(store.queue_depth(SITE).values()) > 0

    assert poll(queued, apply, what="proxied calls queued", every=0.05, tries=2400), \
        log.read_text()[-3000:]
    relay.up()
    for name in PROXIES:
        cluster.wait_event(name, "store-reachable")
    out, _ = apply.communicate(timeout=300)
    assert apply.returncode == 0, log.read_text()[-3000:]
    assert "Applied plan" in out, out[-2000:]

    # the proxies publish the changes they made: the next plan has nothing to do
    with cluster.store() as store:
        assert sum(store.queue_depth(SITE).values()) == 0
    cluster.wait_settled()
    final = cluster.run("xce-plan", str(cluster.site))
    assert final.code == 0, str(final)
