"""The site's planning policy, read from the desired map's ``settings``
(``read_settings``: by the planner for each plan, by the apply for the protected entries).

The compiler validates site-config, but a plan may also be made from maps saved elsewhere,
so a bad value here is a clear Problem (XCE755), never a KeyError deep in a rule.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

from compiler.core.problems import Problem, UserError
from reconciler.plan import codes
from reconciler.planner.discovery_policy import Discovery, read_discovery
from reconciler.planner.kinds import DEFAULT_MANAGEMENT, FALLBACK_LEVEL, LEVELS

DEFAULT_JOIN_DEADLINE = 1800
# octoDNS-like defaults: thresholds apply only once a kind has this many live entries.
DEFAULT_MIN_ENTRIES = 10
DEFAULT_MAX_DELETE_FRACTION = 0.3
DEFAULT_MAX_CREATE_FRACTION = 0.5
# What a provider's inventory may lose of a kind between two trusted reads (beyond what
# applies removed) before it is not trusted: more than this fraction, and this many or more.
DEFAULT_LOSS_FRACTION = 0.2
DEFAULT_LOSS_COUNT = 10
SETTLE_WAITS = ("window", "rejoin")
DEFAULT_SETTLE_WINDOW = 600
# site.provisioning (P6): attempts whose host never joins, the first wait, the longest wait
DEFAULT_ATTEMPTS = 3
DEFAULT_BACKOFF = 900
DEFAULT_MAX_BACKOFF = 21600


def glob_matcher(globs: Collection[str]) -> re.Pattern[str] | None:
    """One compiled regex for a set of fnmatch globs, so matching stays O(1) per id."""
    if not globs:
        return None
    return re.compile("|".join(fnmatch.translate(g) for g in sorted(globs)))


@dataclass(frozen=True, slots=True)
class InventoryLoss:
    """``safety.max_inventory_loss`` of one provider (docs/plan.md, "An inventory that
    shrank"): a loss of a kind is too large when above ``fraction`` and at least ``count``."""

    fraction: float = DEFAULT_LOSS_FRACTION
    count: int = DEFAULT_LOSS_COUNT


@dataclass(frozen=True, slots=True)
class Safety:
    max_changes: int | None
    min_entries: int
    max_delete_fraction: Mapping[str, float]
    default_delete_fraction: float
    max_create_fraction: float
    inventory_loss: Mapping[str, InventoryLoss] = dataclass_field(default_factory=dict)

    def delete_fraction(self, kind: str) -> float:
        return self.max_delete_fraction.get(kind, self.default_delete_fraction)

    def loss_limit(self, provider: str) -> InventoryLoss:
        """What ``provider`` may lose between two reads: its own setting, else ``default``."""
        return self.inventory_loss.get(provider) or self.inventory_loss.get(
            "default", InventoryLoss())


@dataclass(frozen=True, slots=True)
class SettlePolicy:
    """How orphan removals wait after a provider's session changes (P8): the whole
    ``window`` (seconds), or until its workers rejoin (``wait`` "rejoin"), at most the window."""

    wait: str = "window"
    window: int = DEFAULT_SETTLE_WINDOW


@dataclass(frozen=True, slots=True)
class ProvisioningPolicy:
    """How often an instance whose host never joined is provisioned again (P6): after the
    n-th failure in a row the next attempt waits ``backoff × 2^(n-1)`` seconds, at most
    ``max_backoff``; after ``attempts`` failures there is none."""

    attempts: int = DEFAULT_ATTEMPTS
    backoff: int = DEFAULT_BACKOFF
    max_backoff: int = DEFAULT_MAX_BACKOFF

    def wait(self, failures: int) -> int:
        """Seconds from the ``failures``-th failure to the next attempt."""
        return min(self.max_backoff, self.backoff << max(0, failures - 1))


@dataclass(frozen=True, slots=True)
class PlanSettings:
    owner: str
    discovery: Discovery
    join_deadline: int
    release_orphans: bool
    management: Mapping[str, str]
    safety: Safety
    protected: tuple[str, ...]
    _protected_re: re.Pattern[str] | None
    shared_accounts: frozenset[str] = frozenset()
    settle: SettlePolicy = SettlePolicy()
    provisioning: ProvisioningPolicy = ProvisioningPolicy()

    def level(self, kind: str) -> str:
        return self.management.get(kind, FALLBACK_LEVEL)

    def is_protected(self, entry_id: str) -> bool:
        return self._protected_re is not None and self._protected_re.match(entry_id) is not None


def _bad(key: str, message: str) -> Problem:
    return codes.problem(codes.BAD_SETTING, message, f"settings.{key}")


def _number(raw: Mapping[str, Any], key: str, default: float, path: str,
            problems: list[Problem], *, fraction: bool = False) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0 or (
        fraction and value > 1
    ):
        what = "a fraction between 0 and 1" if fraction else "a non-negative number"
        problems.append(_bad(f"{path}{key}", f"{path}{key} must be {what}, got {value!r}"))
        return default
    return float(value)


def _safety(raw: Any, problems: list[Problem]) -> Safety:
    raw = raw if isinstance(raw, Mapping) else {}
    max_changes = raw.get("max_changes")
    if max_changes is not None and (isinstance(max_changes, bool)
                                    or not isinstance(max_changes, int) or max_changes < 0):
        problems.append(_bad("safety.max_changes", f"safety.max_changes must be a whole "
                                                   f"number ≥ 0, got {max_changes!r}"))
        max_changes = None
    fractions_raw = raw.get("max_delete_fraction", {})
    if isinstance(fractions_raw, int | float) and not isinstance(fractions_raw, bool):
        fractions_raw = {"default": fractions_raw}
    if not isinstance(fractions_raw, Mapping):
        problems.append(_bad("safety.max_delete_fraction",
                             "safety.max_delete_fraction must map kinds to fractions"))
        fractions_raw = {}
    path = "safety.max_delete_fraction."
    fractions = {str(k): _number(fractions_raw, k, DEFAULT_MAX_DELETE_FRACTION, path, problems,
                                 fraction=True) for k in fractions_raw}
    default = fractions.pop("default", DEFAULT_MAX_DELETE_FRACTION)
    return Safety(
        max_changes=max_changes,
        min_entries=int(_number(raw, "min_entries", DEFAULT_MIN_ENTRIES, "safety.", problems)),
        max_delete_fraction=fractions,
        default_delete_fraction=default,
        max_create_fraction=_number(raw, "max_create_fraction", DEFAULT_MAX_CREATE_FRACTION,
                                    "safety.", problems, fraction=True),
        inventory_loss=_inventory_loss(raw.get("max_inventory_loss"), problems),
    )


def _inventory_loss(raw: Any, problems: list[Problem]) -> dict[str, InventoryLoss]:
    """``max_inventory_loss: {default | <provider>: {fraction, count}}``; absent parts take
    ``default``'s, then the defaults."""
    path = "safety.max_inventory_loss"
    if raw is None:
        return {}
    if not isinstance(raw, Mapping) or not all(isinstance(v, Mapping) for v in raw.values()):
        problems.append(_bad(path, f"{path} must map 'default' or provider names to "
                             "{fraction, count}"))
        return {}
    base = InventoryLoss()
    default = raw.get("default", {})
    base = InventoryLoss(_number(default, "fraction", base.fraction, f"{path}.default.",
                                 problems, fraction=True),
                         int(_number(default, "count", base.count, f"{path}.default.",
                                     problems)))
    limits = {"default": base}
    for name, item in raw.items():
        if name != "default":
            where = f"{path}.{name}."
            limits[str(name)] = InventoryLoss(
                _number(item, "fraction", base.fraction, where, problems, fraction=True),
                int(_number(item, "count", base.count, where, problems)))
    return limits


def _management(raw: Any, problems: list[Problem]) -> dict[str, str]:
    levels = dict(DEFAULT_MANAGEMENT)
    if not isinstance(raw, Mapping):
        return levels
    for kind, level in raw.items():
        if level not in LEVELS:
            problems.append(_bad(f"management.{kind}", f"management level {level!r} for "
                                 f"{kind} is not one of {', '.join(LEVELS)}"))
            continue
        levels[str(kind)] = str(level)
    return levels


def _settle(raw: Any, problems: list[Problem]) -> SettlePolicy:
    """``settle: {wait, window}``; absent, the default window."""
    if raw is None:
        return SettlePolicy()
    if not isinstance(raw, Mapping):
        problems.append(_bad("settle", f"settle must map 'wait' and 'window', got {raw!r}"))
        return SettlePolicy()
    problems += [_bad(f"settle.{key}", f"settle has no key {key!r}; it has wait and window")
                 for key in sorted(set(raw) - {"wait", "window"}, key=str)]
    wait = raw.get("wait", "window")
    if wait not in SETTLE_WAITS:
        problems.append(_bad("settle.wait", f"settle.wait {wait!r} is not one of "
                             f"{', '.join(SETTLE_WAITS)}"))
        wait = "window"
    window = _number(raw, "window", DEFAULT_SETTLE_WINDOW, "settle.", problems)
    return SettlePolicy(str(wait), int(window))


def _provisioning(raw: Any, problems: list[Problem]) -> ProvisioningPolicy:
    """``provisioning: {attempts, backoff, max_backoff}``; what is absent, the default."""
    if raw is None:
        return ProvisioningPolicy()
    keys = ("attempts", "backoff", "max_backoff")
    if not isinstance(raw, Mapping):
        problems.append(_bad("provisioning", f"provisioning must map {', '.join(keys)}, "
                             f"got {raw!r}"))
        return ProvisioningPolicy()
    problems += [_bad(f"provisioning.{key}", f"provisioning has no key {key!r}; it has "
                      f"{', '.join(keys)}") for key in sorted(set(raw) - set(keys), key=str)]
    attempts = raw.get("attempts", DEFAULT_ATTEMPTS)
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        problems.append(_bad("provisioning.attempts", "provisioning.attempts must be a whole "
                             f"number ≥ 1, got {attempts!r}"))
        attempts = DEFAULT_ATTEMPTS
    path = "provisioning."
    return ProvisioningPolicy(
        attempts, int(_number(raw, "backoff", DEFAULT_BACKOFF, path, problems)),
        int(_number(raw, "max_backoff", DEFAULT_MAX_BACKOFF, path, problems)))


def read_settings(settings: Mapping[str, Any], owner: str = "") -> PlanSettings:
    """Settings with documented defaults filled in; raises UserError on invalid values."""
    problems: list[Problem] = []
    discovery = read_discovery(settings.get("discovery", "report"), problems)
    join_deadline = int(_number(settings, "join_deadline", DEFAULT_JOIN_DEADLINE, "", problems))
    protected_raw = settings.get("protected", ())
    if isinstance(protected_raw, str) or not all(isinstance(g, str) for g in protected_raw):
        problems.append(_bad("protected", "protected must be a list of id globs"))
        protected_raw = ()
    protected = tuple(sorted(protected_raw))
    resolved_owner = str(settings.get("owner") or owner)
    if not resolved_owner:
        problems.append(_bad("owner", "the desired map names no owner tag, so the planner "
                             "cannot tell this site's entries from others'"))
    safety = _safety(settings.get("safety"), problems)
    management = _management(settings.get("management"), problems)
    settle = _settle(settings.get("settle"), problems)
    provisioning = _provisioning(settings.get("provisioning"), problems)
    if problems:
        raise UserError(problems)
    return PlanSettings(
        owner=resolved_owner,
        discovery=discovery,
        join_deadline=join_deadline,
        release_orphans=bool(settings.get("release_orphans", True)),
        management=management,
        safety=safety,
        protected=protected,
        _protected_re=glob_matcher(protected),
        shared_accounts=frozenset(str(p) for p in settings.get("shared_accounts", ())),
        settle=settle,
        provisioning=provisioning,
    )
