"""Properties of make_plan beyond single scenarios: determinism, cost, settings errors."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from compiler.contract.settings import DEFAULT_MANAGEMENT
from compiler.contract.supply_map import Entry, SupplyMap
from compiler.core.problems import UserError
from reconciler.plan.file import plan_file_bytes
from reconciler.planner import compare, make_plan
from reconciler.planner.compare import field_changes, same_fields
from tests.planner.scenario_io import ORIGIN, load_maps, scenario_names

OWNER = "site/t"


def _shuffled(m: SupplyMap, seed: int) -> SupplyMap:
    items = list(m.entries.items())
    random.Random(seed).shuffle(items)
    return replace(m, entries=dict(items))


@pytest.mark.parametrize("name", scenario_names())
def test_plan_is_deterministic_whatever_the_input_order(name: str) -> None:
    desired, live, expected = load_maps(name)
    args = expected["args"]
    kwargs: dict[str, Any] = {"now": args["now"], "targets": args.get("targets", ()),
                              "destroy": args.get("destroy", False),
                              "force": args.get("force", False)}
    first = plan_file_bytes(make_plan(desired, live, **kwargs), destroy=False,
                            origin=ORIGIN)
    for seed in (1, 2):
        again = make_plan(_shuffled(desired, seed), _shuffled(live, seed + 10), **kwargs)
        assert plan_file_bytes(again, destroy=False, origin=ORIGIN) == first


def _counter(i: int, amount: int) -> Entry:
    return Entry(f"counter/slots@host/cn{i:05d}", "counter", "available", "config", "ctl",
                 location=f"host/cn{i:05d}", amount=amount, owner=OWNER)


def test_field_detail_only_for_entries_that_differ(monkeypatch: pytest.MonkeyPatch) -> None:
    """Field detail is made once per differing entry, never over the whole map."""
    calls: list[Any] = []
    views = compare._views

    def counting(*args: Any) -> Any:
        calls.append(args)
        return views(*args)

    monkeypatch.setattr(compare, "_views", counting)
    desired = {e.id: e for e in (_counter(i, 64) for i in range(5000))}
    live = dict(desired)
    for i in range(0, 5000, 500):
        live[_counter(i, 0).id] = _counter(i, 32)
    settings = {"owner": OWNER}
    plan = make_plan(SupplyMap(desired, owner=OWNER, settings=settings),
                     SupplyMap(live, owner=OWNER), now=0)
    assert len(plan.actions) == 10
    assert len(calls) == 10
    assert all(a.changes[0].path == "amount" for a in plan.actions)


def test_live_may_carry_observed_spec_keys() -> None:
    d = Entry("volume-dir/v/u", "volume-dir", "available", "config", "fs",
              spec={"mode": "0700"}, owner=OWNER)
    observed = replace(d, spec={"mode": "0700", "since": 12, "owner_applied": OWNER})
    assert same_fields(d, observed)
    assert field_changes(d, observed) == ()
    changed = replace(d, spec={"mode": "0755", "since": 12})
    assert not same_fields(d, changed)
    (change,) = field_changes(d, changed)
    assert (change.path, change.before, change.after) == ("spec.mode", "0755", "0700")


def test_nested_attributes_get_deep_paths_and_lists_stay_whole() -> None:
    d = Entry("host/a", "host", "available", "config", "ctl",
              attributes={"topo": {"rack": "r1", "row": 2}, "features": ["a", "b"]})
    lv = replace(d, attributes={"topo": {"rack": "r2", "row": 2}, "features": ["a"],
                                "extra": 1})
    got = [(c.path, c.before, c.after) for c in field_changes(d, lv)]
    assert got == [("attributes.extra", 1, None),
                   ("attributes.features", ["a"], ["a", "b"]),
                   ("attributes.topo.rack", "r2", "r1")]


@pytest.mark.parametrize(
    ("settings", "subject"),
    [
        ({"management": {"host": "delete-everything"}}, "settings.management.host"),
        ({"discovery": "maybe"}, "settings.discovery"),
        ({"safety": {"max_delete_fraction": {"host": 3}}},
         "settings.safety.max_delete_fraction.host"),
        ({"safety": {"max_changes": -1}}, "settings.safety.max_changes"),
        ({"protected": "volume/*"}, "settings.protected"),
        ({"owner": ""}, "settings.owner"),
    ],
)
def test_invalid_settings_are_a_clear_problem(settings: dict[str, Any], subject: str) -> None:
    desired = SupplyMap({}, settings={"owner": OWNER, **settings})
    with pytest.raises(UserError) as info:
        make_plan(desired, SupplyMap({}), now=0)
    (problem,) = info.value.problems
    assert (problem.code, problem.subject) == ("XCE755", subject)


def test_settings_owner_falls_back_to_the_maps_owner() -> None:
    e = _counter(1, 1)
    plan = make_plan(SupplyMap({}, owner=OWNER), SupplyMap({e.id: e}), now=0)
    assert [(a.verb, a.entry) for a in plan.actions] == [("delete", e.id)]


def test_desired_digest_is_the_maps_content_digest_unless_given() -> None:
    desired, live, _ = load_maps("no_changes")
    assert make_plan(desired, live, now=0).desired_digest == desired.content_digest()
    assert make_plan(desired, live, now=0, desired_digest="sha256:x").desired_digest == (
        "sha256:x")


def test_docs_list_the_management_defaults() -> None:
    """docs/plan.md is what admins read; it must say what the code does."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "plan.md").read_text()
    para = text[text.index("Defaults (`compiler/contract/settings.py`)"):]
    para = " ".join(para[: para.index("for any other kind")].split())
    destructive, _, correct = para.partition("; `correct` for")
    for kind, level in DEFAULT_MANAGEMENT.items():
        assert f"`{kind}`" in (destructive if level == "correct-destructive" else correct), kind
