"""``settings.discovery`` held against what the planner knows: its name patterns must be
able to match (XCE726), and the group an admitted host joins must be in the desired map
(XCE725). The policy itself is typed in the contract (compiler/contract/settings.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from compiler.contract.settings import Discovery
from compiler.contract.supply_map import Entry
from compiler.contract.vocabulary import EntryKind
from compiler.core.name_patterns import pattern_problem
from compiler.core.problems import Problem, UserError
from reconciler.plan import codes


def pattern_problems(discovery: Discovery) -> list[Problem]:
    """A problem for each name pattern that is neither a hostlist nor a glob."""
    return [codes.problem(codes.DISCOVERY_BAD_PATTERN, f"discovery name pattern {pattern!r}: "
                          f"{why}", f"settings.discovery.names[{i}]")
            for i, pattern in enumerate(discovery.names)
            if (why := pattern_problem(pattern)) is not None]


def check_group(discovery: Discovery, desired: Mapping[str, Entry]) -> None:
    """The group an admitted host joins is one the desired map has (its features come from
    there); raises UserError otherwise."""
    if discovery.group is not None and f"{EntryKind.HOST_GROUP}/{discovery.group}" not in desired:
        raise UserError([codes.problem(
            codes.DISCOVERY_GROUP_MISSING,
            f"settings.discovery.group names host group {discovery.group!r}, which the desired "
            "map does not have", "settings.discovery.group")])
