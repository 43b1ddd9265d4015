"""Allowlists are enforced where the calls arrive (issue 24, N4/P3), and a proxy serves only
what the applied config binds to it.

The calls travel as ``xce-apply`` sends them: through a ``StoreTransport``, queued in the
store and answered by a real ``xce-proxy`` process.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from compiler.contract.supply_map import SupplyMap
from reconciler.pipeline import compile_desired
from reconciler.protocol import ErrorCode, Reply, Request
from reconciler.relay.transport import StoreTransport
from tests.proxy.conftest import any_cluster
from tests.proxy.harness import BIN, SITE, Cluster, ci_env

REFUSED = "provision.create"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def cluster(request: pytest.FixtureRequest) -> Cluster:
    found: Cluster = any_cluster(request)
    return found


def without(opcode: str) -> Any:
    """An edit of the proxies' allowlists that takes ``opcode`` away from every proxy."""
    def edit(allowlists: dict[str, Any]) -> None:
        for proxy in allowlists.values():
            proxy["opcodes"] = [op for op in proxy["opcodes"] if op["name"] != opcode]
    return edit


def call(cluster: Cluster, supply: SupplyMap, provider: str, entry_id: str) -> Reply:
    """Create ``entry_id`` at ``provider`` the way xce-apply does: queued in the store, the
    reply waited for."""
    desired = compile_desired(cluster.site)
    binding = desired.bindings.binding(provider)
    entry = supply.entries[entry_id].to_json()
    request = Request(verb="create", op_id=uuid.uuid4().hex, epoch=1, owner=supply.owner,
                      params={"entry": entry})
    with cluster.store() as store:
        transport = StoreTransport(provider, binding, desired.bindings.proxy_settings, store,
                                   SITE)
        return transport.call(request)


def test_an_opcode_outside_the_allowlist_is_refused_and_recorded(cluster: Cluster) -> None:
    cluster.record_config(without(REFUSED))
    cluster.start("proxy-a")
    cluster.wait_event("proxy-a", "published", provider="cloud-burst")
    supply = compile_desired(cluster.site).supply

    refused = call(cluster, supply, "cloud-burst", "instance/burst001")
    assert not refused.ok and refused.error is not None
    assert refused.error.code is ErrorCode.PERMISSION_DENIED
    assert not refused.error.retryable
    assert REFUSED in refused.error.message and "proxy-a" in refused.error.message
    allowed = call(cluster, supply, "shared-fs", "volume/shared")  # supply.update: granted
    assert allowed.ok, allowed

    with cluster.store() as store:
        refusals = store.refusals(SITE)
    assert [(r.proxy, r.provider, r.opcode) for r in refusals] == \
        [("proxy-a", "cloud-burst", REFUSED)]
    assert "deny by default" in refusals[0].rule
    logged = cluster.proxy("proxy-a").events("refusal")
    assert [(e["provider"], e["opcode"]) for e in logged] == [("cloud-burst", REFUSED)]
    # the simulated cloud was never asked: it holds no instance
    account = cluster.workdir / "providers" / "cloud-burst" / "state.json"
    assert not account.exists() or json.loads(account.read_text())["entries"] == {}


def test_a_proxy_the_applied_config_does_not_name_refuses_to_serve(cluster: Cluster) -> None:
    cluster.record_config()
    stranger = cluster.proxy("proxy-z")
    stranger.start()
    assert stranger.proc is not None
    code = stranger.proc.wait(60)
    log = "\n".join(stranger.lines())
    assert code == 1, log
    assert "XCE861" in log and "'proxy-z'" in log and "proxy-a, proxy-b" in log
    assert "Traceback" not in log
    with cluster.store() as store:
        assert store.provider_leases(SITE) == {}


def test_without_any_applied_config_a_proxy_waits_and_takes_nothing(cluster: Cluster) -> None:
    """Before the first apply records the config, a proxy serves nothing, and says so."""
    proxy = cluster.proxy("proxy-a").start()
    cluster.wait_event("proxy-a", "waiting")
    assert proxy.running
    with cluster.store() as store:
        assert store.provider_leases(SITE) == {}
    env = ci_env()
    assert "BURST_API_TOKEN" not in env and str(BIN) in proxy.argv[0]
