"""Issue 19 §3 (and the one validity rule of §2): ids from a provider obey the contract.

A live id is ``<kind>/<names>`` with path-safe names (no '..', no control or invisible
character), its state one of its kind's, and its kind one the provider declares in
``info``. An entry that breaks it makes the whole report invalid: the provider is
unknown, nothing is planned (above all, nothing is sent back to it), and the problem
names provider, entry and rule."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from compiler.contract.entry import entry_errors
from compiler.contract.supply_map import Entry, SupplyMap
from compiler.contract.vocabulary import LIVE_STATES, HostState, JobState
from reconciler.live import LiveResult, gather_live
from reconciler.planner import make_plan
from reconciler.protocol import ErrorCode, ProviderError
from reconciler.providers.controller_map.entries import parse_entry

OWNER = "site/test"


def _entry(entry_id: str, kind: str = "instance", state: str = "available") -> dict[str, Any]:
    return {"id": entry_id, "kind": kind, "state": state, "source": "provisioner",
            "owner": OWNER, "spec": {"template": "t"}}


def _provider(tmp_path: Path, entries: list[dict[str, Any]],
              capabilities: Sequence[str] | None = ("instance",)) -> dict[str, Any]:
    """A real exec provider: ``info`` declares ``capabilities`` (None: it refuses ``info``),
    ``inventory`` lists ``entries``; it logs every verb it is sent."""
    script = tmp_path / "cloud.py"
    inventory = {"ok": True, "result": {"generation": 7, "complete": True, "entries": entries}}
    info = ({"ok": True, "result": {"name": "cloud", "version": "1",
                                    "capabilities": list(capabilities)}}
            if capabilities is not None else
            {"ok": False, "error": {"code": "INVALID_ARGUMENT", "message": "no info here"}})
    log = tmp_path / "verbs.log"
    script.write_text(
        "import json, sys\n"
        "req = json.loads(sys.stdin.read())\n"
        f"open({str(log)!r}, 'a').write(req['verb'] + '\\n')\n"
        f"print({json.dumps(json.dumps(info))} if req['verb'] == 'info' else "
        f"{json.dumps(json.dumps(inventory))})\n")
    return {"providers": {"cloud": {"kind": "exec", "command": [sys.executable, str(script)],
                                    "timeout": 20}}}


def _gathered(tmp_path: Path, entries: list[dict[str, Any]],
              capabilities: Sequence[str] | None = ("instance",)) -> LiveResult:
    return gather_live(_provider(tmp_path, entries, capabilities), tmp_path, OWNER)


@pytest.mark.parametrize(("bad", "rule"), [
    (_entry("instance/../../etc"), "not path-safe: it is '..'"),
    (_entry("instance/burst\x1b[2J"), "not path-safe: it contains a control character"),
    (_entry("instance/burst\u202e01"), "invisible character U+202E"),
    (_entry("instance/.hidden"), "starts with '.'"),
    (_entry("instance/"), "not path-safe: it is empty"),
    (_entry("instance/a", state="zombie"), "'state' 'zombie' is not a state of a instance"),
    (_entry("host/zz999", kind="host"), "not declare in its capabilities (instance)"),
    (_entry("instance/a", kind="Instance"), "is not an entry kind"),
])
def test_an_entry_outside_the_contract_makes_the_report_invalid(
        tmp_path: Path, bad: dict[str, Any], rule: str) -> None:
    result = _gathered(tmp_path, [_entry("instance/good"), bad])
    assert result.live.entries == {}  # not even the good one: the report is invalid
    assert list(result.live.unknown) == ["cloud"]
    [problem] = result.problems
    assert problem.code == "XCE703" and problem.subject == "cloud"
    assert "provider 'cloud'" in problem.message and rule in problem.message
    assert repr(bad["id"]) in problem.message  # the entry, escaped as messages show names


def test_nothing_is_planned_for_it_and_nothing_sent_back(tmp_path: Path) -> None:
    """Before: `release instance/../../etc` was planned, and the apply sent it back to the
    provider; `host/zz999` from a provider of instances was drained."""
    result = _gathered(tmp_path, [_entry("instance/../../etc"), _entry("host/zz999", "host")])
    desired = SupplyMap({}, owner=OWNER, settings={"owner": OWNER})
    plan = make_plan(desired, result.live, now=0)
    assert plan.actions == ()
    assert (tmp_path / "verbs.log").read_text().split() == ["info", "inventory"]


def test_a_provider_that_declares_no_kinds_is_held_to_the_rest(tmp_path: Path) -> None:
    """A provider that refuses ``info`` is held to no list of kinds (it declares none), but
    still to the grammar of ids and states."""
    fine = _gathered(tmp_path, [_entry("host/zz999", "host")], capabilities=None)
    assert list(fine.live.entries) == ["host/zz999"]
    bad = _gathered(tmp_path, [_entry("host/../x", "host")], capabilities=None)
    assert bad.live.unknown and not bad.live.entries


def test_the_declared_kinds_are_held(tmp_path: Path) -> None:
    result = _gathered(tmp_path, [_entry("instance/a"), _entry("license/x@site", "license")],
                       capabilities=["instance", "license"])
    assert sorted(result.live.entries) == ["instance/a", "license/x@site"]


def test_the_states_are_the_lifecycles_ones() -> None:
    """One list of states per kind: the controller map's lifecycle and jobs use the same."""
    assert {s.value for s in HostState} == LIVE_STATES["host"]
    assert LIVE_STATES["job"] == {s.value for s in JobState}


@pytest.mark.parametrize("entry_id", [
    "counter/slots@host/cn0001", "dataset-copy/imagenet@3@group/gpu",
    "quota/shared/user/alice", "job-dir/shared/alice/1234", "license/matlab@site",
    "volume-dir/shared/" + "é" * 100,
])
def test_the_ids_of_the_contract_are_valid(entry_id: str) -> None:
    kind = entry_id.partition("/")[0]
    doc = {"id": entry_id, "kind": kind, "state": "available", "source": "config"}
    assert entry_errors(doc) == []


def test_the_controller_map_refuses_a_request_outside_the_contract() -> None:
    with pytest.raises(ProviderError) as caught:
        parse_entry({"id": "host/../x", "kind": "host"}, provider="controller")
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT
    assert "not path-safe" in caught.value.message
    with pytest.raises(ProviderError) as caught:
        parse_entry({"id": "host/x", "kind": "host", "state": "zombie"}, provider="controller")
    assert "is not a state of a host" in caught.value.message
    assert parse_entry({"id": "host/x", "kind": "host"}, provider="c") == Entry(
        "host/x", "host", "available", "config", "c")
