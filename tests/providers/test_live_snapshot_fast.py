"""A live snapshot read the fast way (``decode_map``) loads or fails exactly as the general
path does: same map, or the same problems."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.contract.supply_map import SupplyMap
from compiler.core.problems import Problem, UserError
from reconciler import live as live_mod
from reconciler.live import load_live_snapshot
from tests.compiler.test_decode_map import entry_docs, json_values, map_docs, valid_entries

_objects = st.dictionaries(st.text(max_size=3), st.text(max_size=3) | st.integers(), max_size=2)
# Snapshots as proxies write them, now and then with a header field of another shape.
_snapshots = st.fixed_dictionaries({"entries": st.lists(
    valid_entries | valid_entries | valid_entries | entry_docs, max_size=5)}, optional={
    "schema": st.sampled_from([1, 2, 0, True, "1"]), "site": st.text(max_size=3),
    "unknown": _objects | json_values, "generations": _objects | st.none(),
    "settings": _objects | st.none(),
})


def loaded_generally(raw: bytes, file: str) -> SupplyMap | list[Problem]:
    """What load_live_snapshot did before the fast path: validate every entry, then build."""
    doc = orjson.loads(raw)
    return live_mod._snapshot_problems(doc, file) or SupplyMap.from_json(doc)


def loaded(path: Path) -> SupplyMap | list[Problem]:
    try:
        return load_live_snapshot(path)
    except UserError as err:
        return list(err.problems)


@settings(max_examples=500, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(map_docs | _snapshots)
def test_fast_and_general_paths_agree(tmp_path: Path, doc: Any) -> None:
    path = tmp_path / "live.json"
    path.write_text(json.dumps(doc))
    assert loaded(path) == loaded_generally(path.read_bytes(), str(path))


@pytest.mark.parametrize("amount", [2**64, -(2**63) - 1])
def test_an_amount_beyond_64_bits_is_an_error_as_before(tmp_path: Path, amount: int) -> None:
    """orjson reads it as a float, which is not an amount; msgspec would read it exactly."""
    path = tmp_path / "live.json"
    path.write_text(json.dumps({"entries": [
        {"id": "counter/x", "kind": "counter", "state": "available", "source": "config",
         "amount": amount}]}))
    problems = loaded(path)
    assert problems == loaded_generally(path.read_bytes(), str(path))
    assert isinstance(problems, list) and [p.code for p in problems] == ["XCE709"]


def test_a_duplicate_id_is_still_reported(tmp_path: Path) -> None:
    entry = {"id": "host/a", "kind": "host", "state": "available", "source": "config"}
    path = tmp_path / "live.json"
    path.write_text(json.dumps({"entries": [entry, entry]}))
    problems = loaded(path)
    assert isinstance(problems, list)
    assert [p.message for p in problems] == ["entry host/a is listed twice"]
