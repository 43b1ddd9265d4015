"""The site's planning policy, read from the desired map's ``settings`` (``read_settings``:
by the planner for each plan, by the apply for the protected entries).

The typed policy and its defaults are the contract's (compiler/contract/settings.py). A plan
may be made from a map saved elsewhere, so what the contract finds wrong becomes a clear
Problem here (XCE755, naming ``settings.<key>``), never a KeyError deep in a rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from compiler.contract.settings import PlanSettings, Settings, SettingsError
from compiler.core.problems import UserError
from reconciler.plan import codes
from reconciler.planner.discovery_policy import pattern_problems


def read_settings(settings: Mapping[str, Any], owner: str = "") -> PlanSettings:
    """Settings with their defaults filled in (``owner``: the map's, when they name none);
    raises UserError on invalid values."""
    held = settings if isinstance(settings, Settings) else Settings(settings)
    try:
        plan = held.checked(owner)
    except SettingsError as err:
        raise UserError([codes.problem(codes.BAD_SETTING, p.message, p.subject)
                         for p in err.problems]) from None
    problems = pattern_problems(plan.discovery)
    if problems:
        raise UserError(problems)
    return plan
