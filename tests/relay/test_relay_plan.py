"""xce-plan of a site with a proxied provider: its inventory is what the proxy published.

The plan from the published rows equals the plan the provider run in-process gives; with
nothing published, a published error or a stale publication, the provider is unknown and
nothing is planned for it — not the delete its orphan would otherwise get.
"""

from __future__ import annotations

import time

import pytest

from compiler.contract.supply_map import Entry
from reconciler.plan.model import Plan
from reconciler.plan_use_case import PlanMade, PlanRequest, make
from reconciler.relay.codes import NO_APPLIED_CONFIG, OLDER_CONFIG
from tests.apply.conftest import OWNER, Site, pool, volume
from tests.relay.conftest import (
    ALLOWLISTS,
    PROVIDER,
    PROXY,
    SITE,
    StandIn,
    in_process,
    proxied,
    write_bindings,
)

ORPHAN = pool("old")  # in the provider, owned by the site, gone from its config


def _plan(site: Site, now: float) -> PlanMade:
    return make(PlanRequest(None, desired_file=site.desired_file, state=site.target.url,
                            destroy=True), now)


def _actions(plan: Plan) -> list[dict[str, object]]:
    return [a.to_json() for a in plan.actions]


def _site(site: Site) -> None:
    """Desired: v1 (as live), v2 (differs live), v3 (missing); live also holds the orphan."""
    site.write([volume("v1"), volume("v2", mode="0750"), volume("v3")])
    site.seed([volume("v1"), volume("v2", mode="0700"), ORPHAN])
    with site.store():  # the store the proxies publish to exists before any plan
        pass


def _record(site: Site) -> None:
    """The proxied config recorded, as the apply after turning proxies on records it."""
    desired = site.desired()
    with site.store() as store:
        store.record_config(SITE, desired.bindings.to_json(), dict(desired.proxy_allowlists),
                            "tester")


def test_plan_reads_the_published_inventory_as_the_provider_would_answer(
        site: Site, stand_in: StandIn) -> None:
    _site(site)
    write_bindings(site, in_process(site))
    now = time.time()
    here = _plan(site, now)
    assert {a.verb.value for a in here.plan.actions} >= {"create", "update", "delete"}
    stand_in.publish()
    # the command a proxy would run is not even there: the plan never starts the provider
    write_bindings(site, proxied(site, command=["/nonexistent/provider"]))
    _record(site)
    relayed = _plan(site, now)
    assert relayed.live.supply.unknown == here.live.supply.unknown == {}
    assert relayed.plan.unknown == here.plan.unknown == ()
    assert _actions(relayed.plan) == _actions(here.plan)
    assert relayed.live.supply.generations == here.live.supply.generations
    assert not [p for p in relayed.problems if p.code in (NO_APPLIED_CONFIG, OLDER_CONFIG)]


def _stale(site: Site, stand_in: StandIn) -> str:
    write_bindings(site, proxied(site), {"inventory_max_age": 0.05})
    stand_in.publish()
    header = stand_in.store.published_header(SITE, PROVIDER)
    assert header is not None
    while stand_in.store.store_now() <= header.published + 0.05:  # the store's clock moves on
        time.sleep(0.01)
    return "older than inventory_max_age"


def _error(site: Site, stand_in: StandIn) -> str:
    write_bindings(site, proxied(site))
    stand_in.publish()
    stand_in.publish_error("UNAVAILABLE: the file system does not answer")
    return "the file system does not answer"


def _none(site: Site, stand_in: StandIn) -> str:
    write_bindings(site, proxied(site))
    return "has not published its inventory"


def _behind(site: Site, stand_in: StandIn) -> str:
    """A change made and answered, and the proxy gone before it published again: what it
    published before no longer holds (waited for up to the binding's timeout + the ttl)."""
    write_bindings(site, proxied(site, timeout=0.2), {"lease_ttl": 0.1})
    stand_in.publish()
    store = stand_in.store
    store.enqueue_calls(SITE, PROVIDER, [("op-1", {"verb": "create", "op_id": "op-1"})])
    [call] = store.take_calls(SITE, stand_in.instance, {PROVIDER: stand_in.epoch}, 1)
    store.finish_call(SITE, call.call_id, stand_in.instance, stand_in.epoch,
                      {"ok": True, "result": {}}, changed=True)
    return "has not published its inventory since"


@pytest.mark.parametrize("publication", [_none, _error, _stale, _behind])
def test_an_unusable_publication_leaves_the_provider_unknown(
        site: Site, stand_in: StandIn, publication: object) -> None:
    _site(site)
    assert callable(publication)
    said = publication(site, stand_in)
    _record(site)
    made = _plan(site, time.time())
    reason = made.live.supply.unknown[PROVIDER]
    assert reason.startswith("UNAVAILABLE: provider 'slow'") and said in reason, reason
    assert PROXY in reason and "docs/proxies.md" in reason
    assert not [a for a in made.plan.actions if a.provider == PROVIDER]  # no delete, no create
    assert [p.code for p in made.problems if p.subject == PROVIDER] == ["XCE701"]


def test_the_plan_says_when_proxies_follow_no_config_or_another(
        site: Site, stand_in: StandIn) -> None:
    _site(site)
    write_bindings(site, proxied(site))
    stand_in.publish()
    made = _plan(site, time.time())
    first = [p for p in made.problems if p.code == NO_APPLIED_CONFIG]
    assert len(first) == 1 and "'slow'" in first[0].message and "xce-apply" in first[0].hint
    _record(site)
    assert not [p for p in _plan(site, time.time()).problems
                if p.code in (NO_APPLIED_CONFIG, OLDER_CONFIG)]
    write_bindings(site, proxied(site), allowlists={**ALLOWLISTS, "p2": {"providers": []}})
    later = [p for p in _plan(site, time.time()).problems if p.code == OLDER_CONFIG]
    assert len(later) == 1 and "#1" in later[0].message and "tester" in later[0].message


def test_without_a_store_a_proxied_provider_is_unknown_and_says_how_to_reach_it(
        site: Site) -> None:
    site.write([volume("v1")])
    write_bindings(site, proxied(site))
    made = make(PlanRequest(None, desired_file=site.desired_file,
                            workdir=site.root / "elsewhere"), time.time())
    reason = made.live.supply.unknown[PROVIDER]
    assert "no state store" in reason and "--state" in reason and PROXY in reason
    assert not made.plan.actions


def test_an_entry_the_proxy_published_is_decoded_as_the_provider_wrote_it(
        site: Site, stand_in: StandIn) -> None:
    site.write([volume("v1", retention=86400)])
    site.seed([Entry.from_json({**volume("v1", retention=86400).to_json(),
                                "attributes": {"note": "é ü 🙂"}, "owner": OWNER})])
    write_bindings(site, proxied(site))
    stand_in.publish()
    _record(site)
    live = _plan(site, time.time()).live.supply
    assert live.entries["volume/v1"].attributes == {"note": "é ü 🙂"}
    assert live.entries["volume/v1"].spec["retention"] == 86400
