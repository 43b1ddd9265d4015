"""What the state store knows about a site decides the empty/shrunk-inventory guards."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reconciler.planner import make_plan
from tests.planner.scenario_io import load_maps


@pytest.mark.parametrize(
    ("applied_before", "generation", "blocked"),
    [
        (None, 7, True),  # no store: a provider that changed before and shrank is suspect
        (None, 1, False),  # no store: a provider that never held anything is new
        (False, 7, False),  # never applied (a first apply killed halfway): nothing to lose
        (True, 1, True),  # applied before: a restarted generation does not hide the loss
    ],
)
def test_guards_follow_the_site_history(applied_before: bool | None, generation: int,
                                        blocked: bool) -> None:
    desired, live, expected = load_maps("guard_recreate")
    providers = {e.provider for e in desired.entries.values() if e.provider}
    live = replace(live, generations={p: generation for p in providers})
    plan = make_plan(desired, live, now=expected["args"]["now"], applied_before=applied_before)
    assert plan.blocked is blocked
    assert ("XCE754" in {p.code for p in plan.problems}) is blocked
