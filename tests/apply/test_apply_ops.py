"""op_ids and requests: stable for a plan and its file, and understood by a real provider."""

from __future__ import annotations

from dataclasses import replace

from compiler.contract.supply_map import Entry
from reconciler.apply import FreshPlan, Status
from reconciler.apply.ops import op_id, plan_digest, request_for
from reconciler.plan.file import load_plan
from reconciler.plan.model import Action, Verb
from tests.apply.conftest import OWNER, Site, volume, volume_site


def test_op_ids_survive_the_plan_file_and_differ_between_plans(site: Site) -> None:
    site.write(volume_site(volumes=1, users=1))
    plan = site.plan()
    loaded = load_plan(site.save(plan)).plan
    assert plan_digest(loaded) == plan_digest(plan)
    ids = {op_id(plan_digest(plan), a) for a in plan.actions}
    assert len(ids) == len(plan.actions)
    other = replace(plan, revision="another")
    assert ids.isdisjoint(op_id(plan_digest(other), a) for a in other.actions)


def test_plan_verbs_become_protocol_requests() -> None:
    live = volume("v1").to_json()
    cases = {
        "create": ("create", {"entry": live}),
        "stage": ("create", {"entry": live, "action": "stage"}),
        "update": ("update", {"id": "volume/v1", "entry": live}),
        "drain": ("update", {"id": "volume/v1", "entry": live, "action": "drain"}),
        "delete": ("delete", {"id": "volume/v1", "entry": live}),
        "release": ("delete", {"id": "volume/v1", "entry": live, "action": "release"}),
    }
    for verb, (wire, params) in cases.items():
        before = None if verb in ("create", "stage") else live
        after = None if verb in ("delete", "release") else live
        action = Action(f"{verb}:volume/v1", Verb(verb), "volume/v1", "volume", "slow", "t",
                        before=before, after=after)
        request = request_for(action, "op-1", 7, OWNER)
        assert (request.verb, dict(request.params)) == (wire, params), verb
        assert (request.op_id, request.epoch, request.owner) == ("op-1", 7, OWNER)


def _host(name: str) -> Entry:
    return Entry(f"host/{name}", "host", "available", "config", "controller",
                 attributes={"group": "cpu"}, owner=OWNER)


def test_create_then_release_through_the_built_in_controller_map(site: Site) -> None:
    group = Entry("host-group/cpu", "host-group", "available", "config", "controller",
                  attributes={"hosts": "cn[1-2]"}, owner=OWNER)
    controller = {"controller": {"kind": "controller-map"}}
    site.write([group, _host("cn1"), _host("cn2")], providers=controller)
    created = site.apply(FreshPlan(force=True))
    assert created.counts()["done"] == 3 and created.exit_code == 0
    by_entry = {o.action.entry: o for o in created.outcomes}
    assert by_entry["host/cn1"].action.depends_on == ("create:host-group/cpu",)

    site.write([group, _host("cn1")], providers=controller)  # cn2 leaves; it never joined
    released = site.apply(FreshPlan(force=True), allow_destroy=True)
    (outcome,) = released.outcomes
    assert (outcome.action.verb, outcome.action.entry, outcome.status) == (
        "release", "host/cn2", Status.DONE)
    assert site.plan().actions == ()
