"""An inventory older than ``inventory_max_age`` makes its provider unknown, never absent
(issue 24): a removal a fresh inventory would plan is not planned from a stale one.

A dataset copy the config does not ask for is staged through proxy-a (a queued call, as an
apply makes it), so a plan from its fresh inventory evicts it; then the proxies stop (no one
publishes any more) and the publication is made older than the bound — the store's clock is
what ages are measured with, so the header's time is moved back instead of waiting ten
minutes. The next plan lists the provider as unknown, naming the age and the bound, and
evicts nothing.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from typing import Any

from reconciler.pipeline import compile_desired
from reconciler.protocol import Request
from reconciler.relay.transport import StoreTransport
from tests.proxy.harness import SITE, Cluster, raw_sql

EXTRA = "dataset-copy/imagenet@3@group/cpu-a"  # config places imagenet@3 at group/gpu only
MAX_AGE = 600  # the site's inventory_max_age (harness.Timings: 10m)


def stage_extra_copy(cluster: Cluster) -> None:
    """Stage imagenet@3 at cpu-cache through the queue, as a copy config once asked for."""
    desired = compile_desired(cluster.site)
    entry = desired.supply.entries["dataset-copy/imagenet@3@group/gpu"]
    extra = replace(entry, id=EXTRA, location="group/cpu-a", provider="cpu-cache").to_json()
    request = Request(verb="create", op_id=uuid.uuid4().hex, epoch=1, owner=entry.owner or "",
                      params={"entry": extra, "action": "stage"})
    with cluster.store() as store:
        transport = StoreTransport("cpu-cache", desired.bindings.binding("cpu-cache"),
                                   desired.bindings.proxy_settings, store, SITE)
        reply = transport.call(request)
    assert reply.ok, reply


def plan(cluster: Cluster, code: int) -> dict[str, Any]:
    """The plan as JSON (its problems under "stderr"); ``code``: its exit code, 1 when a
    provider is unknown (the plan is incomplete), else 2 (the controller's creates)."""
    run = cluster.run("xce-plan", str(cluster.site), "--destroy", "--format", "json")
    assert run.code == code, str(run)
    loaded: dict[str, Any] = json.loads(run.out)
    loaded["stderr"] = run.err
    return loaded


def evictions(found: dict[str, Any]) -> list[str]:
    return [a["entry"] for a in found["actions"] if a["action"] in ("evict", "delete")]


def test_a_stale_inventory_plans_no_removal(sqlite_cluster: Cluster) -> None:
    cluster = sqlite_cluster
    cluster.record_config()
    proxy = cluster.proxy("proxy-a").start()
    cluster.wait_event("proxy-a", "published", provider="cpu-cache")
    stage_extra_copy(cluster)
    cluster.wait_event("proxy-a", "published", provider="cpu-cache", entries=1)

    fresh = plan(cluster, 2)
    assert evictions(fresh) == [EXTRA]
    assert proxy.stop() == 0  # SIGTERM: nobody publishes cpu-cache any more

    moved = raw_sql(cluster.state_url, "UPDATE published_inventories SET published = "
                    "published - ? WHERE site = ? AND provider = ?", (MAX_AGE + 60, SITE,
                                                                        "cpu-cache"))
    assert moved == 1
    stale = plan(cluster, 1)
    assert evictions(stale) == []
    text = json.dumps(stale["unknown"]) + stale["stderr"]
    assert "cpu-cache" in text and "inventory_max_age" in text, text[:3000]
    # the other providers' inventories are still fresh: only cpu-cache is unknown
    assert "shared-fs" not in json.dumps(stale["unknown"])
