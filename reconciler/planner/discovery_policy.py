"""``settings.discovery``: the policy for hosts that join unasked, as the planner reads it.

The compiler emits the word (``report``, ``admit``, ``reject``) or a mapping
(compiler/model/discovery.py); a map saved elsewhere may hold anything, so each field is
checked here and a bad one is a Problem naming ``settings.discovery.<key>``, never a
KeyError in a rule. ``check_group`` holds the mapping against the desired map it came with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from compiler.contract.supply_map import Entry
from compiler.core.name_patterns import name_matcher, pattern_problem
from compiler.core.problems import Problem, UserError
from reconciler.plan import codes

POLICIES = ("report", "admit", "reject")
OTHERWISE = ("report", "reject")
_KEYS = ("policy", "names", "otherwise", "group", "counters")


@dataclass(frozen=True, slots=True)
class Discovery:
    """``policy`` for the discovered hosts ``names`` match (all of them, without names),
    ``otherwise`` for the rest; an admitted host joins ``group`` and gets ``counters``."""

    policy: str = "report"
    names: tuple[str, ...] = ()
    otherwise: str = "report"
    group: str | None = None
    counters: Mapping[str, int] = field(default_factory=dict)

    def policy_for(self, host: str) -> str:
        if not self.names or name_matcher(self.names)(host):
            return self.policy
        return self.otherwise

    def why(self, host: str) -> str:
        """The policy's words for ``host``, for a plan's reason."""
        if not self.names:
            return f"discovery policy: {self.policy}"
        shown = ", ".join(self.names)
        if name_matcher(self.names)(host):
            return f"discovery policy: {self.policy} (names {shown})"
        return f"discovery policy: {self.otherwise} (otherwise: not in names {shown})"


def _bad(key: str, message: str) -> Problem:
    return codes.problem(codes.BAD_SETTING, message, f"settings.discovery{key}")


def _word(value: Any, key: str, allowed: tuple[str, ...], problems: list[Problem]) -> str:
    """One of ``allowed`` (the first is the default); ``key`` is where, "" for the word form."""
    if value not in allowed:
        problems.append(_bad(key and f".{key}", f"discovery {key or 'policy'} {value!r} is not "
                             f"one of {', '.join(allowed)}"))
        return allowed[0]
    return str(value)


def _names(raw: Any, problems: list[Problem]) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(n, str) for n in raw):
        problems.append(_bad(".names", "discovery names must be a list of hostlists or globs"))
        return ()
    for i, pattern in enumerate(raw):
        why = pattern_problem(pattern)
        if why is not None:
            problems.append(codes.problem(codes.DISCOVERY_BAD_PATTERN, f"discovery name "
                                          f"pattern {pattern!r}: {why}",
                                          f"settings.discovery.names[{i}]"))
    return tuple(raw)


def _counters(raw: Any, problems: list[Problem]) -> dict[str, int]:
    if not isinstance(raw, Mapping) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0
        for k, v in raw.items()
    ):
        problems.append(_bad(".counters", "discovery counters must map counter names to "
                             "whole numbers ≥ 0"))
        return {}
    return dict(raw)


def _group(raw: Any, problems: list[Problem]) -> str | None:
    if raw is not None and not isinstance(raw, str):
        problems.append(_bad(".group", f"discovery group must be a host group's name, got "
                             f"{raw!r}"))
        return None
    return raw


def read_discovery(raw: Any, problems: list[Problem]) -> Discovery:
    """The policy from a word or a mapping; what is wrong goes to ``problems``."""
    if isinstance(raw, str):
        return Discovery(policy=_word(raw, "", POLICIES, problems))
    if not isinstance(raw, Mapping):
        problems.append(_bad("", f"discovery must be one of {', '.join(POLICIES)} or a "
                             f"mapping, got {raw!r}"))
        return Discovery()
    for key in sorted(set(raw) - set(_KEYS)):
        problems.append(_bad(f".{key}", f"unknown discovery key {key!r}; the keys are "
                             f"{', '.join(_KEYS)}"))
    return Discovery(
        policy=_word(raw.get("policy"), "policy", POLICIES, problems),
        names=_names(raw.get("names", []), problems),
        otherwise=_word(raw.get("otherwise", "report"), "otherwise", OTHERWISE, problems),
        group=_group(raw.get("group"), problems),
        counters=_counters(raw.get("counters", {}), problems),
    )


def check_group(discovery: Discovery, desired: Mapping[str, Entry]) -> None:
    """The group an admitted host joins is one the desired map has (its features come from
    there); raises UserError otherwise."""
    if discovery.group is not None and f"host-group/{discovery.group}" not in desired:
        raise UserError([codes.problem(
            codes.DISCOVERY_GROUP_MISSING,
            f"settings.discovery.group names host group {discovery.group!r}, which the desired "
            "map does not have", "settings.discovery.group")])
