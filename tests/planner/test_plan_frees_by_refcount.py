"""A plan leaves no reference cycle behind: what it built is freed as soon as it is dropped.

A cycle that reaches the maps (a cached closure over the planner's state, as locality's
once was) keeps half a million entries alive until the cyclic collector walks them all,
seconds of a real plan; these scenarios go through locality and dependency ordering.
"""

from __future__ import annotations

import gc

import pytest

from tests.planner.scenario_io import plan_scenario


@pytest.mark.parametrize("name", ["locality_stage", "locality_evict", "locality_new_group",
                                  "hosts_create", "hosts_removed"])
def test_planning_leaves_no_cycle(name: str) -> None:
    plan_scenario(name)  # warm up: imports and caches made once per process are not garbage
    enabled = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        plan, _ = plan_scenario(name)
        assert plan.actions
        del plan
        assert gc.collect() == 0
    finally:
        if enabled:
            gc.enable()
