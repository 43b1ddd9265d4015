"""compare.field_changes finds the differing fields without deepdiff where their values are
JSON, and gives exactly what deepdiff gives: the same paths, in the same order, with the
same values; what the walk cannot vouch for goes to deepdiff."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.planner import compare

_KEYS = st.sampled_from(["a", "b", "a.b", "rack"])
_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-2, 2),
                    st.sampled_from([0.0, 1.0, 2.5]), st.sampled_from(["", "a", "b", "1"]))
_VALUES = st.recursive(_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=3)), max_leaves=8)
# Top-level names as compare._views writes them; "attributes.a" with a key "b" below it
# reads the same as "attributes.a.b".
_VIEWS = st.dictionaries(
    st.sampled_from(["state", "amount", "attributes.a", "attributes.a.b", "spec.x"]), _VALUES,
    max_size=4)


def _changes(paths: dict[str, list[str]], before: Any, after: Any) -> list[tuple[Any, ...]]:
    return [(path, compare._lookup(before, parts), compare._lookup(after, parts))
            for path, parts in sorted(paths.items())]


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(_VIEWS, _VIEWS)
def test_the_walk_finds_what_deepdiff_finds(before: dict[str, Any],
                                            after: dict[str, Any]) -> None:
    try:
        walked = compare._walked(before, after)
    except compare._Unsure:
        return
    assert _changes(walked, before, after) == _changes(compare._diffed(before, after),
                                                       before, after)


@pytest.mark.parametrize(("before", "after", "paths"), [
    ({"spec.x": {"a": 1}}, {"spec.x": {"a": 1.0}}, ["spec.x.a"]),  # a type change
    ({"spec.x": {"a": 1}}, {"spec.x": {"a": True}}, ["spec.x.a"]),
    ({"spec.x": [{"a": 1}]}, {"spec.x": [{"a": 2}]}, ["spec.x"]),  # a list is one field
    ({"spec.x": {}}, {"spec.x": {"a": {"b": 1}}}, ["spec.x.a"]),
    ({"spec.x": None}, {"spec.x": {"a": 1}}, ["spec.x"]),
])
def test_walked_paths(before: dict[str, Any], after: dict[str, Any], paths: list[str]) -> None:
    assert sorted(compare._walked(before, after)) == paths
    assert sorted(compare._diffed(before, after)) == paths


@pytest.mark.parametrize(("before", "after"), [
    ({"spec.x": [1, {"a": 2}]}, {"spec.x": [True, {"a": 2.0}]}),  # equal but for the types
    ({"attributes.a.b": 1, "attributes.a": {"b": 1}}, {"attributes.a.b": 2,
                                                       "attributes.a": {"b": 2}}),
    ({"spec.x": (1, 2)}, {"spec.x": (1, 3)}),  # not JSON
])
def test_what_the_walk_cannot_vouch_for_goes_to_deepdiff(before: dict[str, Any],
                                                         after: dict[str, Any]) -> None:
    with pytest.raises(compare._Unsure):
        compare._walked(before, after)
