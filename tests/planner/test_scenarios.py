"""Every planning rule, one scenario folder each: desired + live → the expected plan.

Actions are compared in order (the order is part of the contract); the reported lists
(orphans, co-managed, unknown, pending, drift) exactly; missing keys mean "empty".
"""

from __future__ import annotations

import pytest

from reconciler.plan.model import NOTE_LISTS
from tests.planner.scenario_io import plan_scenario, scenario_names


def test_there_are_enough_scenarios() -> None:
    assert len(scenario_names()) >= 15


@pytest.mark.parametrize("name", scenario_names())
def test_scenario(name: str) -> None:
    plan, expected = plan_scenario(name)
    actions = {a.id: a for a in plan.actions}

    assert [[a.verb, a.entry] for a in plan.actions] == expected["actions"]
    for name_ in NOTE_LISTS:
        assert sorted(n.entry for n in getattr(plan, name_)) == expected.get(name_, []), name_
    assert sorted(a.id for a in plan.actions if a.destructive) == sorted(
        expected.get("destructive", [])
    )
    assert [[p.code, p.severity.value] for p in plan.problems] == expected.get("problems", [])
    assert plan.blocked is expected.get("blocked", False)

    for action_id, deps in expected.get("depends_on", {}).items():
        assert list(actions[action_id].depends_on) == deps, action_id
    for action_id, text in expected.get("reasons", {}).items():
        assert text in actions[action_id].reason, (action_id, actions[action_id].reason)
    notes = {n.entry: n.reason for name_ in NOTE_LISTS for n in getattr(plan, name_)}
    for entry, text in expected.get("note_reasons", {}).items():
        assert text in notes[entry], (entry, notes[entry])
    for action_id, state in expected.get("after_state", {}).items():
        after = actions[action_id].after
        assert after is not None and after["state"] == state, action_id
    for action_id, owner in expected.get("after_owner", {}).items():
        after = actions[action_id].after
        assert after is not None and after["owner"] == owner, action_id
    for action_id, changes in expected.get("changes", {}).items():
        got = [[c.path, c.before, c.after] for c in actions[action_id].changes]
        assert got == changes, action_id
    for action_id, failed in expected.get("failed_attempt", {}).items():
        got_failed = actions[action_id].failed_attempt
        assert got_failed is not None and got_failed.to_json() == failed, action_id
    assert dict(plan.attempts_reset) == expected.get("attempts_reset", {})


@pytest.mark.parametrize("name", scenario_names())
def test_every_action_depends_only_on_earlier_actions(name: str) -> None:
    """The order is a topological order of depends_on, so a serial applier is also right."""
    plan, _ = plan_scenario(name)
    seen: set[str] = set()
    for action in plan.actions:
        assert set(action.depends_on) <= seen, action.id
        seen.add(action.id)


@pytest.mark.parametrize("name", scenario_names())
def test_fingerprints_cover_the_touched_entries(name: str) -> None:
    plan, expected = plan_scenario(name)
    assert sorted(plan.fingerprints) == sorted(
        {a.entry for a in plan.actions} | set(expected.get("also_fingerprinted", []))
    )
    creates = [a.entry for a in plan.actions if a.before is None]
    assert all(plan.fingerprints[e] == "absent" for e in creates)
