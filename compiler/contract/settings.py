"""The site's planning policy as a supply map carries it (``settings``), typed, with its
defaults defined here once.

The compiler writes ``settings`` from site-config (compiler/emit/settings.py), holding only
what the site wrote plus a few keys always written, so a map's bytes and digest do not
change when a default is added. The planner reads them typed (``Settings.checked``: the
defaults filled in). A map may also be made elsewhere, so every value is checked here and a
bad one is a ``SettingProblem`` naming ``settings.<key>`` (the planner's XCE755), never a
KeyError deep in a rule. The site-config models (compiler/model/site.py) take their
defaults from these classes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from functools import cached_property
from typing import Annotated, Any, Literal, get_args

from pydantic import BeforeValidator, ConfigDict, TypeAdapter, ValidationError
from pydantic.dataclasses import dataclass as typed
from pydantic_core import PydanticCustomError

from compiler.contract.vocabulary import (
    LEVELS,
    OTHERWISE,
    POLICIES,
    EntryKind,
    Level,
    Policy,
)
from compiler.core.globs import glob_matcher
from compiler.core.name_patterns import name_matcher

_CONFIG = ConfigDict(extra="forbid")

# Supply the site-config fully describes may be removed by default; volumes, user directories
# and quotas hold or guard users' data, so removing them is opt-in. A volume's retention evicts
# job directories past it (with --destroy); jobs are the controller's record, never planned on.
DEFAULT_MANAGEMENT: Mapping[str, Level] = {
    **{kind: Level.CORRECT_DESTRUCTIVE for kind in EntryKind},
    EntryKind.VOLUME: Level.CORRECT,
    EntryKind.VOLUME_DIR: Level.CORRECT,
    EntryKind.QUOTA: Level.CORRECT,
    EntryKind.JOB: Level.OBSERVE,
}
FALLBACK_LEVEL = Level.CORRECT  # a kind the table does not know
SettleWait = Literal["window", "rejoin"]
SETTLE_WAITS: tuple[str, ...] = get_args(SettleWait)
UnreviewedApply = Literal["refuse", "allow"]


def _fail(message: str, **context: Any) -> PydanticCustomError:
    return PydanticCustomError("setting", message, context)


def _number(*, fraction: bool = False, whole: bool = False) -> Callable[[Any], Any]:
    """A number ≥ 0: a fraction (at most 1, kept a float), or seconds and counts (an int)."""
    what = "a fraction between 0 and 1" if fraction else "a non-negative number"

    def check(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0 or (
                fraction and value > 1):
            raise _fail("must be {what}, got {got}", what=what, got=repr(value))
        return float(value) if fraction else int(value)

    return check


def _whole(least: int) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise _fail("must be a whole number ≥ {least}, got {got}", least=least,
                        got=repr(value))
        return value

    return check


def _one_of(words: tuple[str, ...]) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if value not in words:
            raise _fail("{got} is not one of {words}", got=repr(value), words=", ".join(words))
        return value

    return check


def _mapping(keys: tuple[str, ...], shape: str) -> Callable[[Any], Any]:
    """A mapping of ``keys`` only: else a problem saying it must map ``shape``."""
    def check(value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise _fail("must map {shape}, got {got}", shape=shape, got=repr(value))
        unknown = sorted(set(value) - set(keys), key=str)
        if unknown:
            raise _fail("has no key {name}; it has {keys}", key=unknown[0],
                        name=repr(unknown[0]), keys=", ".join(keys))
        return value

    return check


def _counters(value: Any) -> Any:
    if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0
            for k, v in value.items()):
        raise _fail("must map counter names to whole numbers ≥ 0")
    return value


def _globs(value: Any) -> Any:
    if isinstance(value, str) or not isinstance(value, list | tuple) or not all(
            isinstance(g, str) for g in value):
        raise _fail("must be a list of id globs")
    return tuple(sorted(value))


def _names(value: Any) -> Any:
    if not isinstance(value, list | tuple) or not all(isinstance(n, str) for n in value):
        raise _fail("must be a list of hostlists or globs")
    return tuple(value)


def _group(value: Any) -> Any:
    if value is not None and not isinstance(value, str):
        raise _fail("must be a host group's name, got {got}", got=repr(value))
    return value


def _delete_fractions(value: Any) -> Any:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return {"default": value}  # one fraction for every kind
    if not isinstance(value, Mapping):
        raise _fail("must map kinds to fractions")
    return value


Seconds = Annotated[int, BeforeValidator(_number())]
Count = Seconds  # the same check: a number ≥ 0, kept whole
Fraction = Annotated[float, BeforeValidator(_number(fraction=True))]


@typed(frozen=True, config=_CONFIG)
class Discovery:
    """``policy`` for the discovered hosts ``names`` match (all of them, without names),
    ``otherwise`` for the rest; an admitted host joins ``group`` and gets ``counters``."""

    policy: Annotated[Policy, BeforeValidator(_one_of(POLICIES))] = Policy.REPORT
    names: Annotated[tuple[str, ...], BeforeValidator(_names)] = ()
    otherwise: Annotated[Policy, BeforeValidator(_one_of(OTHERWISE))] = Policy.REPORT
    group: Annotated[str | None, BeforeValidator(_group)] = None
    counters: Annotated[Mapping[str, int], BeforeValidator(_counters)] = dataclass_field(
        default_factory=dict)

    def policy_for(self, host: str) -> Policy:
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


_DISCOVERY_KEYS = ("policy", "names", "otherwise", "group", "counters")


def _discovery(value: Any) -> Any:
    """The word form (``report``) is the mapping ``{policy: report}``."""
    if isinstance(value, str):
        return {"policy": _one_of(POLICIES)(value)}
    if not isinstance(value, Mapping):
        raise _fail("must be one of {words} or a mapping, got {got}",
                    words=", ".join(POLICIES), got=repr(value))
    value = _mapping(_DISCOVERY_KEYS, ", ".join(_DISCOVERY_KEYS))(value)
    if "policy" not in value:
        raise _fail("has no policy; it must be one of {words}", key="policy",
                    words=", ".join(POLICIES))
    return value


@typed(frozen=True, config=_CONFIG)
class InventoryLoss:
    """``safety.max_inventory_loss`` of one provider (docs/plan.md, "An inventory that
    shrank"): a loss of a kind is too large when above ``fraction`` and at least ``count``.
    Unset (None) parts take the ``default`` entry's, then these defaults."""

    fraction: Fraction | None = 0.2
    count: Count | None = 10


_LOSS = InventoryLoss()
_Loss = Annotated[InventoryLoss, BeforeValidator(_mapping(("fraction", "count"),
                                                          "'fraction' and 'count'"))]


def _losses(value: Any) -> Any:
    """Parts a provider leaves out are None here, so ``loss_limit`` takes ``default``'s."""
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(v, Mapping) for v in value.values()):
        raise _fail("must map 'default' or provider names to {shape}",
                    shape="{fraction, count}")
    return {name: {"fraction": None, "count": None, **item} for name, item in value.items()}


@typed(frozen=True, config=_CONFIG)
class Safety:
    """octoDNS-like thresholds: the fraction guards apply only once a kind has
    ``min_entries`` live entries (docs/plan.md, "Guards")."""

    max_changes: Annotated[int | None, BeforeValidator(
        lambda v: v if v is None else _whole(0)(v))] = None
    min_entries: Count = 10
    max_delete_fraction: Annotated[Mapping[str, Fraction], BeforeValidator(
        _delete_fractions)] = dataclass_field(default_factory=dict)
    max_create_fraction: Fraction = 0.5
    max_inventory_loss: Annotated[Mapping[str, _Loss], BeforeValidator(
        _losses)] = dataclass_field(default_factory=dict)

    def delete_fraction(self, kind: str) -> float:
        fractions = self.max_delete_fraction
        return fractions.get(kind, fractions.get("default", 0.3))

    def loss_limit(self, provider: str) -> tuple[float, int]:
        """What ``provider`` may lose between two reads (a fraction, a count): its own
        setting, else ``default``'s, else the defaults."""
        own = self.max_inventory_loss.get(provider, _UNSET_LOSS)
        base = self.max_inventory_loss.get("default", _LOSS)
        fraction = next(f for f in (own.fraction, base.fraction, _LOSS.fraction) if f is not None)
        count = next(c for c in (own.count, base.count, _LOSS.count) if c is not None)
        return fraction, count


_UNSET_LOSS = InventoryLoss(None, None)


@typed(frozen=True, config=_CONFIG)
class SettlePolicy:
    """How orphan removals wait after a provider's session changes (P8): the whole
    ``window`` (seconds), or until its workers rejoin (``wait`` "rejoin"), at most the window."""

    wait: Annotated[SettleWait, BeforeValidator(_one_of(SETTLE_WAITS))] = "window"
    window: Seconds = 600


@typed(frozen=True, config=_CONFIG)
class ProvisioningPolicy:
    """How often an instance whose host never joined is provisioned again (P6): after the
    n-th failure in a row the next attempt waits ``backoff × 2^(n-1)`` seconds, at most
    ``max_backoff``; after ``attempts`` failures there is none."""

    attempts: Annotated[int, BeforeValidator(_whole(1))] = 3
    backoff: Seconds = 900
    max_backoff: Seconds = 21600

    def wait(self, failures: int) -> int:
        """Seconds from the ``failures``-th failure to the next attempt."""
        return min(self.max_backoff, self.backoff << max(0, failures - 1))


def _levels(value: Any) -> Any:
    """``management``: the written levels over ``DEFAULT_MANAGEMENT``."""
    if not isinstance(value, Mapping):
        return dict(DEFAULT_MANAGEMENT)
    return {**DEFAULT_MANAGEMENT, **value}


_PROVISIONING_KEYS = ("attempts", "backoff", "max_backoff")


@typed(frozen=True, config=ConfigDict(extra="ignore"))
class PlanSettings:
    """The planning policy with every default filled in. ``owner`` is the site's owner tag
    (the map's when ``settings`` names none); other keys of a map's settings are ignored."""

    owner: str = ""
    discovery: Annotated[Discovery, BeforeValidator(_discovery)] = Discovery()
    join_deadline: Seconds = 1800
    release_orphans: Annotated[bool, BeforeValidator(bool)] = True
    management: Annotated[Mapping[str, Annotated[Level, BeforeValidator(_one_of(LEVELS))]],
                          BeforeValidator(_levels)] = dataclass_field(
        default_factory=lambda: dict(DEFAULT_MANAGEMENT))
    safety: Annotated[Safety, BeforeValidator(
        lambda v: {} if not isinstance(v, Mapping) else v)] = Safety()
    protected: Annotated[tuple[str, ...], BeforeValidator(_globs)] = ()
    shared_accounts: Annotated[frozenset[str], BeforeValidator(
        lambda v: frozenset(str(p) for p in v))] = frozenset()
    settle: Annotated[SettlePolicy, BeforeValidator(
        _mapping(("wait", "window"), "'wait' and 'window'"))] = SettlePolicy()
    provisioning: Annotated[ProvisioningPolicy, BeforeValidator(
        _mapping(_PROVISIONING_KEYS, ", ".join(_PROVISIONING_KEYS)))] = ProvisioningPolicy()
    # xce-apply --reviewed without a reviewed plan: only "allow" allows it
    unreviewed_apply: Annotated[UnreviewedApply, BeforeValidator(
        lambda v: "allow" if v == "allow" else "refuse")] = "refuse"

    def level(self, kind: str) -> Level:
        return self.management.get(kind, FALLBACK_LEVEL)

    @cached_property
    def _protected_re(self) -> re.Pattern[str] | None:
        return glob_matcher(self.protected)

    def is_protected(self, entry_id: str) -> bool:
        rx = self._protected_re
        return rx is not None and rx.match(entry_id) is not None


@dataclass(frozen=True, slots=True)
class SettingProblem:
    """A bad value in a map's settings: where (``settings.<key>``) and what is wrong."""

    subject: str
    message: str


class SettingsError(ValueError):
    def __init__(self, problems: list[SettingProblem]) -> None:
        super().__init__("; ".join(p.message for p in problems))
        self.problems = problems


_PLAN = TypeAdapter(PlanSettings)


def _problems(err: ValidationError) -> list[SettingProblem]:
    """pydantic's errors as settings problems: the path of keys, and the check's words."""
    out = []
    for e in err.errors():
        path = [str(part) for part in e["loc"] if not str(part).startswith("function-")]
        ctx = e.get("ctx") or {}
        message = f"{'.'.join(path)} {e['msg']}" if path else e["msg"]
        if "key" in ctx:
            path.append(str(ctx["key"]))
        out.append(SettingProblem(".".join(["settings", *path]), message))
    return out


class Settings(Mapping[str, Any]):
    """A map's ``settings``: the mapping as written (what the file and the digest hold), and
    ``checked`` the typed ``PlanSettings`` it means. A map made elsewhere may hold anything,
    so the check happens when the planning policy is read, once."""

    __slots__ = ("_doc", "_typed")

    def __init__(self, doc: Mapping[str, Any] | None = None) -> None:
        if doc is not None and not isinstance(doc, Mapping):
            raise ValueError(f"settings must be an object, got {type(doc).__name__}")
        self._doc: Mapping[str, Any] = doc or {}
        self._typed: PlanSettings | SettingsError | None = None

    def __getitem__(self, key: str) -> Any:
        return self._doc[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._doc)

    def __len__(self) -> int:
        return len(self._doc)

    def __repr__(self) -> str:
        return f"Settings({dict(self._doc)!r})"

    def checked(self, owner: str = "") -> PlanSettings:
        """The typed policy; ``owner`` when the settings name no owner tag. Raises
        SettingsError naming each bad setting."""
        if self._typed is None:
            try:
                self._typed = _PLAN.validate_python(self._doc)
            except ValidationError as err:
                self._typed = SettingsError(_problems(err))
        if isinstance(self._typed, SettingsError):
            raise self._typed
        if self._typed.owner or not owner:
            return _owned(self._typed)
        return _owned(_PLAN.validate_python({**self._doc, "owner": owner}))


def _owned(plan: PlanSettings) -> PlanSettings:
    if not plan.owner:
        raise SettingsError([SettingProblem(
            "settings.owner", "the desired map names no owner tag, so the planner cannot tell "
            "this site's entries from others'")])
    return plan
