"""A paused active proxy is fenced when it wakes up (issue 24, N2): SIGSTOP past its lease,
the standby takes over under newer epochs; SIGCONT, and the old holder's writes change
nothing, it logs each lease lost and stops serving those providers.

The config is recorded as an apply records it (``Cluster.record_config``), without applying
the example's 3,297 entries: leases, publications and fencing need no more.
"""

from __future__ import annotations

import signal

from tests.proxy.harness import SITE, Cluster

PROVIDERS = ("cloud-burst", "cpu-cache", "flexlm", "gpu-cache", "shared-fs")


def held_by(cluster: Cluster) -> dict[str, tuple[str, int]]:
    """provider -> (holder, epoch) of each lease held now."""
    with cluster.store() as store:
        now = store.store_now()
        return {p: (lease.holder, lease.epoch) for p, lease in store.provider_leases(SITE).items()
                if lease.held(now)}


def test_a_paused_holder_is_fenced_when_it_wakes_up(sqlite_cluster: Cluster) -> None:
    """On SQLite (the demo's store); the SIGKILLs of test_system_converge.py take leases over
    on PostgreSQL."""
    cluster = sqlite_cluster
    cluster.record_config()
    a, b = cluster.start("proxy-a", "proxy-b")
    for provider in PROVIDERS:
        cluster.wait_event("proxy-a", "published", provider=provider)
    first = held_by(cluster)
    assert {holder for holder, _ in first.values()} == {"proxy-a"}
    assert set(first) == set(PROVIDERS)

    a.signal(signal.SIGSTOP)  # past its lease: the standby takes every provider over
    for provider in PROVIDERS:
        cluster.wait_event("proxy-b", "lease-taken", provider=provider)
        cluster.wait_event("proxy-b", "published", provider=provider)
    taken = held_by(cluster)
    assert {holder for holder, _ in taken.values()} == {"proxy-b"}
    assert all(taken[p][1] > first[p][1] for p in PROVIDERS), (first, taken)

    a.signal(signal.SIGCONT)
    for provider in PROVIDERS:
        cluster.wait_event("proxy-a", "lease-lost", provider=provider)
    lost_at = len(a.lines())
    # proxy-b goes on publishing; proxy-a's writes changed nothing and it publishes no more
    count = len(b.events("published"))
    cluster.wait(lambda: len(b.events("published")) >= count + len(PROVIDERS),
                 "proxy-b publishing again", b.proc)
    with cluster.store() as store:
        headers = store.published_headers(SITE)
    assert {(h.proxy, h.epoch) for h in headers.values()} == \
        {("proxy-b", taken[p][1]) for p in PROVIDERS}
    assert held_by(cluster) == taken
    after = [e for e in a.events()[lost_at - 1:] if e.get("event") in ("published", "call")]
    assert after == [], "the fenced proxy went on serving"
    assert a.running, "a proxy that lost its leases stands by; it does not exit"
