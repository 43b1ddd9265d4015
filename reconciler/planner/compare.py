"""Entry comparison: a cheap equality test first, field-level detail only for the few that differ.

Live entries may carry observed spec keys the desired map never names (``since``,
``owner_applied``), so only the spec keys the desired entry specifies are compared.
deepdiff runs on a minimal view that holds just the differing top-level fields, which keeps
it off the hot path and makes its cost proportional to the drift, not to the map.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deepdiff import DeepDiff

from compiler.contract.supply_map import Entry
from reconciler.plan.model import FieldChange

_ABSENT = object()


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


def _field_path(path: list[Any]) -> list[str]:
    """Path parts down through mappings; a list is one field, shown whole (Terraform does too)."""
    parts: list[str] = []
    for part in path:
        if not isinstance(part, str):
            break
        parts.append(part)
    return parts


def field_changes(desired: Entry, live: Entry, *, state: bool = True) -> tuple[FieldChange, ...]:
    """The fields that differ, sorted by path; empty when the entries agree."""
    before, after = _views(desired, live, state)
    if not before and not after:
        return ()
    paths: dict[str, list[str]] = {}
    # threshold_to_diff_deeper=0: by default deepdiff reports a mapping whose keys mostly
    # differ as one change of the root, which has no field path, and the update was lost.
    diff = DeepDiff(before, after, view="tree", threshold_to_diff_deeper=0)
    for levels in diff.values():
        for level in levels:
            parts = _field_path(level.path(output_format="list"))
            if parts:
                paths.setdefault(".".join(parts), parts)
    return tuple(
        FieldChange(path, _lookup(before, parts), _lookup(after, parts))
        for path, parts in sorted(paths.items())
    )
