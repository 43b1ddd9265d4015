"""Entry comparison: a cheap equality test first, field-level detail only for the few that differ.

Live entries may carry observed spec keys the desired map never names (``since``,
``owner_applied``), so only the spec keys the desired entry specifies are compared.
Field detail is computed on a minimal view that holds just the differing top-level fields,
so its cost is proportional to the drift, not to the map. An entry's fields are JSON values
(dicts, lists, strings, numbers, booleans, null), whose differences a plain walk finds
(``_walk``), path for path as deepdiff reports them; deepdiff runs only on what that walk
cannot vouch for (other types, lists equal but for their items' types, paths that read the
same), where its rules decide (docs/decisions.md, "deepdiff").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deepdiff import DeepDiff

from compiler.contract.supply_map import Entry
from reconciler.plan.model import FieldChange

_ABSENT = object()
_LEAVES = frozenset({str, int, float, bool, type(None)})  # compared by type and value
_JSON = _LEAVES | {dict, list}


class _Unsure(Exception):
    """The walk cannot tell what deepdiff would report here: deepdiff decides."""


def same_fields(desired: Entry, live: Entry) -> bool:
    """True when amount, attributes and the desired spec keys all agree (state not included)."""
    return (
        (desired.amount is None or desired.amount == live.amount)
        and desired.attributes == live.attributes
        and desired.spec.items() <= live.spec.items()
    )


def _views(desired: Entry, live: Entry, state: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """Flat ``{"attributes.rack": value}`` views of only the fields that differ."""
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    if state and desired.state != live.state:
        before["state"], after["state"] = live.state, desired.state
    if desired.amount is not None and desired.amount != live.amount:
        before["amount"], after["amount"] = live.amount, desired.amount
    for key in desired.attributes.keys() | live.attributes.keys():
        old = live.attributes.get(key, _ABSENT)
        new = desired.attributes.get(key, _ABSENT)
        if old != new:
            if old is not _ABSENT:
                before[f"attributes.{key}"] = old
            if new is not _ABSENT:
                after[f"attributes.{key}"] = new
    for key, new in desired.spec.items():
        old = live.spec.get(key, _ABSENT)
        if old != new:
            if old is not _ABSENT:
                before[f"spec.{key}"] = old
            after[f"spec.{key}"] = new
    return before, after


def _lookup(view: Mapping[str, Any], parts: list[str]) -> Any:
    value: Any = view
    for part in parts:
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _same(old: Any, new: Any) -> bool:
    """Equal and of the same JSON types all the way down (``1`` and ``1.0`` are not)."""
    kind = type(old)
    if kind is not type(new) or kind not in _JSON:
        return False
    if kind is dict:
        return old.keys() == new.keys() and all(_same(v, new[k]) for k, v in old.items())
    if kind is list:
        return len(old) == len(new) and all(map(_same, old, new))
    return bool(old == new)


def _plain(value: Any) -> bool:
    """Made of JSON types only, with string keys."""
    kind = type(value)
    if kind is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if kind is list:
        return all(map(_plain, value))
    return kind in _LEAVES


def _walk(old: Any, new: Any, parts: list[str], found: list[list[str]]) -> None:
    """Add to ``found`` the field paths below ``parts`` where ``old`` and ``new`` differ, as
    deepdiff (``threshold_to_diff_deeper=0``) reports them, cut at the first list index:
    a key added or removed, a type changed, a leaf or a list that differs."""
    if old is new:
        return
    kind = type(old)
    if kind is not type(new):
        if kind not in _JSON or type(new) not in _JSON:
            raise _Unsure
        found.append(parts)
    elif kind is dict:
        _walk_dict(old, new, parts, found)
    elif kind is list:
        if _list_differs(old, new):
            found.append(parts)  # deepdiff reports an item, whose path is cut here
    elif kind not in _LEAVES:
        raise _Unsure
    elif old != new:
        found.append(parts)


def _walk_dict(old: dict[Any, Any], new: dict[Any, Any], parts: list[str],
               found: list[list[str]]) -> None:
    for key in old.keys() | new.keys():
        if type(key) is not str:
            raise _Unsure
        if key in old and key in new:
            _walk(old[key], new[key], [*parts, key], found)
        else:
            found.append([*parts, key])


def _list_differs(old: list[Any], new: list[Any]) -> bool:
    """Whether deepdiff reports an item of these lists; ``_Unsure`` when its matching of
    items decides (lists equal but for their items' types) or they are not JSON."""
    if old == new:
        if not _same(old, new):
            raise _Unsure
        return False
    if not (_plain(old) and _plain(new)):
        raise _Unsure
    return True


def _walked(before: dict[str, Any], after: dict[str, Any]) -> dict[str, list[str]]:
    """The differing fields' paths by their dotted names."""
    found: list[list[str]] = []
    _walk(before, after, [], found)
    paths = {".".join(parts): parts for parts in found}
    if len(paths) < len(found):
        raise _Unsure  # two paths that read the same ("spec.a.b"): deepdiff's order picks one
    return paths


def _field_path(path: list[Any]) -> list[str]:
    """Path parts down through mappings; a list is one field, shown whole (Terraform does too)."""
    parts: list[str] = []
    for part in path:
        if not isinstance(part, str):
            break
        parts.append(part)
    return parts


def _diffed(before: dict[str, Any], after: dict[str, Any]) -> dict[str, list[str]]:
    """The differing fields' paths as deepdiff finds them, for what ``_walk`` cannot vouch for."""
    paths: dict[str, list[str]] = {}
    # threshold_to_diff_deeper=0: by default deepdiff reports a mapping whose keys mostly
    # differ as one change of the root, which has no field path, and the update was lost.
    diff = DeepDiff(before, after, view="tree", threshold_to_diff_deeper=0)
    for levels in diff.values():
        for level in levels:
            parts = _field_path(level.path(output_format="list"))
            if parts:
                paths.setdefault(".".join(parts), parts)
    return paths


def field_changes(desired: Entry, live: Entry, *, state: bool = True) -> tuple[FieldChange, ...]:
    """The fields that differ, sorted by path; empty when the entries agree."""
    before, after = _views(desired, live, state)
    if not before and not after:
        return ()
    try:
        paths = _walked(before, after)
    except _Unsure:
        paths = _diffed(before, after)
    return tuple(
        FieldChange(path, _lookup(before, parts), _lookup(after, parts))
        for path, parts in sorted(paths.items())
    )
