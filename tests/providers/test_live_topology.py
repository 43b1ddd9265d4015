"""A live entry's ``attributes.topology`` is a segment map (R5), checked as the protocol's
``segments`` checks one: in a provider's inventory (else the report is garbage) and in a
live snapshot, by the fast path and the general one alike."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from compiler.contract.supply_map import SupplyMap
from reconciler.live import entry_errors, gather_live
from tests.providers.kit import OWNER
from tests.providers.test_live_snapshot_fast import loaded, loaded_generally

GOOD = {"rack": "A01", "switch": "leaf-a", "site.example/pod": "p7"}
BAD = [
    ({}, "non-empty object"),
    ([["rack", "A01"]], "non-empty object"),
    ("A01", "non-empty object"),
    (None, "non-empty object"),
    ({"rack": ""}, "not a non-empty string"),
    ({"rack": 7}, "not a non-empty string"),
    ({"rack": ["A01"]}, "not a non-empty string"),  # unhashable: no crash in the cache
    ({"rack-": "A01"}, "is not a topology key"),
    ({"rack": "A\u202e01"}, "invisible character"),
    ({"rack": "A" * 10_000}, "at most 255"),
]


def _host(topology: Any, name: str = "cn01") -> dict[str, Any]:
    return {"id": f"host/{name}", "kind": "host", "state": "available", "source": "config",
            "attributes": {"group": "cpu", "topology": topology}}


def test_a_segment_map_is_a_valid_topology_each_time() -> None:
    """Twice: once checked, once remembered; an equal map of another host is as valid."""
    assert entry_errors(_host(GOOD)) == []
    assert entry_errors(_host(dict(GOOD), "cn02")) == []
    assert entry_errors(_host({"rack": "B01"})) == []


@pytest.mark.parametrize(("topology", "says"), BAD)
def test_anything_else_is_an_error_of_the_attributes(topology: Any, says: str) -> None:
    entry_errors(_host(GOOD))  # a valid place remembered first: no excuse for a bad one
    [(field, message)] = entry_errors(_host(topology))
    assert field == "attributes" and says in message
    assert "attributes.topology" in message and len(message) < 1000  # never the whole value


@pytest.mark.parametrize("topology", [GOOD, *(t for t, _ in BAD)])
def test_a_snapshot_loads_or_fails_alike_on_both_paths(tmp_path: Path, topology: Any) -> None:
    path = tmp_path / "live.json"
    path.write_text(json.dumps({"entries": [_host(GOOD, "cn00"), _host(topology)]}))
    got = loaded(path)
    assert got == loaded_generally(path.read_bytes(), str(path))
    if topology is GOOD:
        assert isinstance(got, SupplyMap)
        assert got.entries["host/cn01"].attributes["topology"] == GOOD
    else:
        assert isinstance(got, list) and [p.code for p in got] == ["XCE709"]
        assert got[0].where is not None
        assert got[0].where.ypath == ("entries", 1, "attributes")


def test_a_provider_reporting_a_bad_topology_is_unknown(tmp_path: Path) -> None:
    """A real exec provider whose inventory places a host at rack ''."""
    script = tmp_path / "bad.py"
    entries = [_host(GOOD, "cn00"), _host({"rack": ""})]
    reply = {"ok": True, "result": {"generation": 1, "complete": True, "entries": entries}}
    script.write_text(f"import sys\nsys.stdin.read()\nprint({json.dumps(json.dumps(reply))})\n")
    binding = {"kind": "exec", "command": [sys.executable, str(script)], "timeout": 20}
    result = gather_live({"providers": {"bad": binding}}, tmp_path, OWNER)
    assert result.live.entries == {} and list(result.live.unknown) == ["bad"]
    [problem] = result.problems
    assert problem.code == "XCE703" and "inventory entry #1" in problem.message
    assert "the value of 'rack' is not a label" in problem.message
