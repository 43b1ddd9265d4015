"""xce-apply of a site with a proxied provider: the config recorded, the calls queued in
batches and answered by the proxy, and a call no proxy answers kept in doubt."""

from __future__ import annotations

import time

import pytest

from reconciler.apply import ApplyOptions, FreshPlan, RetryPolicy, Status, apply
from reconciler.apply.codes import RESUMED
from reconciler.protocol import ErrorCode
from reconciler.state import Holder, OpStatus
from reconciler.state.runs import lock_name, run_prefix
from tests.apply.conftest import FAST_RETRY, Site
from tests.relay.conftest import (
    ALLOWLISTS,
    PROVIDER,
    SITE,
    CountingStore,
    StandIn,
    proxied,
    serving,
    taking,
    volumes,
    write_bindings,
)

MANY = 24
HOLDER = Holder("ci@runner1:4242:feed", "runner1", "job-7")


def test_an_apply_queues_its_calls_in_batches_and_the_proxy_answers_them(
        site: Site, stand_in: StandIn) -> None:
    site.write(volumes(MANY))
    write_bindings(site, proxied(site))
    stand_in.publish()  # empty: every volume is to create
    # 20 ms a transaction, as to a PostgreSQL server across a network: the calls that
    # arrive while one batch is written go together in the next
    with CountingStore(site.target.url, round_trip=0.02) as store, serving(stand_in):
        report = apply(site.desired(), FreshPlan(), store, site.workdir,
                       ApplyOptions(retry=FAST_RETRY, parallelism=8))
    assert [o.status for o in report.outcomes] == [Status.DONE] * MANY, report.outcomes
    assert sorted(site.provider_state()["entries"]) == sorted(f"volume/v{i}"
                                                              for i in range(1, MANY + 1))
    assert sorted(stand_in.answered) == sorted(o.op_id for o in report.outcomes)
    assert store.queued == MANY
    assert store.enqueues < MANY, "each call was queued in a transaction of its own"


def test_the_apply_records_the_config_the_proxies_follow_even_with_nothing_to_do(
        site: Site, stand_in: StandIn) -> None:
    site.write([])
    write_bindings(site, proxied(site))
    stand_in.publish()
    with CountingStore(site.target.url) as store:
        report = apply(site.desired(), FreshPlan(), store, site.workdir,
                       ApplyOptions(retry=FAST_RETRY, holder=HOLDER))
        assert report.outcomes == ()
        recorded = store.applied_config(SITE)
        assert recorded is not None and recorded.seq == 1
        assert recorded.bindings == site.desired().bindings.to_json()
        assert recorded.bindings["providers"][PROVIDER]["via"] == "proxy"
        assert recorded.allowlists == ALLOWLISTS
        assert recorded.applied_by == HOLDER.name
        apply(site.desired(), FreshPlan(), store, site.workdir, ApplyOptions(retry=FAST_RETRY))
        again = store.applied_config(SITE)
        assert again is not None and again.seq == 1  # the same config: no new number
    assert store.enqueues == 0


@pytest.mark.parametrize("resumed", [False, True])
def test_a_call_no_proxy_answers_is_deadline_exceeded_and_stays_in_doubt(
        site: Site, stand_in: StandIn, resumed: bool) -> None:
    site.write(volumes(1))
    write_bindings(site, proxied(site, timeout=0.2), {"lease_ttl": 0.1})
    stand_in.publish()
    with CountingStore(site.target.url) as store:
        started = time.monotonic()
        with taking(stand_in) as took:  # taken, never answered: the proxy died mid-call
            report = apply(site.desired(), FreshPlan(), store, site.workdir,
                           ApplyOptions(retry=RetryPolicy(retries=0)))
        waited = time.monotonic() - started
        assert took.is_set()
        (outcome,) = report.outcomes
        assert (outcome.status, outcome.error) == (Status.FAILED, ErrorCode.DEADLINE_EXCEEDED)
        assert "no proxy answered its create call" in outcome.message
        assert "within 0.3 s" in outcome.message and "stays in doubt" in outcome.message
        assert waited >= 0.3
        doubt = store.in_doubt(run_prefix(lock_name(SITE)))
        assert [(e.op_id, e.status) for e in doubt] == [(outcome.op_id, OpStatus.RUNNING)]
        if not resumed:
            return
        with serving(stand_in):  # the proxy comes back: the resumed apply settles the op
            again = apply(site.desired(), FreshPlan(), store, site.workdir,
                          ApplyOptions(retry=FAST_RETRY))
    assert RESUMED in [n.code for n in again.notices]
    assert [(o.op_id, o.status) for o in again.outcomes] == [(outcome.op_id, Status.DONE)]
    assert stand_in.answered == [outcome.op_id]  # queued once, made once
    assert site.executed() == ["volume/v1"]


def test_a_call_no_proxy_takes_is_taken_back_and_not_in_doubt(
        site: Site, stand_in: StandIn) -> None:
    """With no proxy holding the lease, a queued call is withdrawn after twice the lease ttl
    (not the whole timeout): never made, so failed, not in doubt, and the queue is empty."""
    site.write(volumes(1))
    write_bindings(site, proxied(site, timeout=30), {"lease_ttl": 0.1})
    stand_in.publish()
    stand_in.store.release_leases(SITE, stand_in.instance)  # the proxy stopped
    with CountingStore(site.target.url) as store:
        started = time.monotonic()
        report = apply(site.desired(), FreshPlan(), store, site.workdir,
                       ApplyOptions(retry=RetryPolicy(retries=0)))
        waited = time.monotonic() - started
        (outcome,) = report.outcomes
        assert (outcome.status, outcome.error) == (Status.FAILED, ErrorCode.UNAVAILABLE)
        assert "taken back from the queue, not made" in outcome.message
        assert 0.2 <= waited < 10  # 2 × the ttl, not the binding's 30 s
        assert store.in_doubt(run_prefix(lock_name(SITE))) == []
        assert store.queue_depth(SITE) == {}
    assert stand_in.answered == [] and site.executed() == []
