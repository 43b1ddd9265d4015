"""The saved plan file: exact round trip, binding, and clear errors for bad files."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from compiler.contract.supply_map import Entry, SupplyMap
from compiler.core.canonical import digest_of, dumps
from compiler.core.problems import UserError
from reconciler.plan.file import (
    FORMAT_VERSION,
    fingerprint,
    load_plan,
    plan_file_bytes,
    save_plan,
    stale_entries,
)
from tests.planner.scenario_io import ORIGIN, load_maps, plan_scenario


def _code(path: Path) -> str:
    with pytest.raises(UserError) as info:
        load_plan(path)
    (problem,) = info.value.problems
    assert problem.subject == str(path)
    assert problem.hint
    return problem.code


def test_round_trip_is_exact(tmp_path: Path) -> None:
    plan, _ = plan_scenario("volumes_quotas")
    path = tmp_path / "out" / "plan.json"
    save_plan(path, plan, destroy=True, origin=ORIGIN)
    saved = load_plan(path)
    assert saved.plan == plan
    assert saved.destroy is True
    assert saved.origin == ORIGIN
    assert saved.desired_digest == plan.desired_digest.strip() != ""
    assert saved.revision == "abc123"
    assert saved.format_version == FORMAT_VERSION
    assert path.read_bytes() == plan_file_bytes(plan, destroy=True, origin=ORIGIN)
    assert list(tmp_path.joinpath("out").iterdir()) == [path]  # no temp file left over


def test_destroy_permission_is_bound(tmp_path: Path) -> None:
    plan, _ = plan_scenario("volumes_quotas")
    save_plan(tmp_path / "p.json", plan, destroy=False, origin=ORIGIN)
    assert load_plan(tmp_path / "p.json").destroy is False
    assert plan_file_bytes(plan, destroy=False, origin=ORIGIN) != plan_file_bytes(
        plan, destroy=True, origin=ORIGIN)


def test_missing_file(tmp_path: Path) -> None:
    assert _code(tmp_path / "nope.json") == "XCE760"


def test_not_json(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_bytes(b"\x00garbage{")
    assert _code(path) == "XCE761"


def test_truncated_file(tmp_path: Path) -> None:
    plan, _ = plan_scenario("datasets")
    path = tmp_path / "p.json"
    data = plan_file_bytes(plan, destroy=False, origin=ORIGIN)
    path.write_bytes(data[: len(data) // 2])
    assert _code(path) == "XCE761"


def test_edited_file_fails_its_digest(tmp_path: Path) -> None:
    plan, _ = plan_scenario("datasets")
    doc = orjson.loads(plan_file_bytes(plan, destroy=False, origin=ORIGIN))
    doc["body"]["destroy"] = True  # someone grants themselves destroy by hand
    path = tmp_path / "p.json"
    path.write_bytes(dumps(doc))
    assert _code(path) == "XCE761"


def test_foreign_json(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_bytes(b'{"entries": []}')
    assert _code(path) == "XCE762"
    path.write_bytes(b"[1, 2]")
    assert _code(path) == "XCE762"


def test_newer_format(tmp_path: Path) -> None:
    plan, _ = plan_scenario("datasets")
    doc = orjson.loads(plan_file_bytes(plan, destroy=False, origin=ORIGIN))
    doc["version"] = FORMAT_VERSION + 1
    path = tmp_path / "p.json"
    path.write_bytes(dumps(doc))
    assert _code(path) == "XCE763"


def _signed(path: Path, body: dict[str, Any], version: int = FORMAT_VERSION) -> Path:
    """A plan file around ``body`` with a valid digest: what is refused is the body itself."""
    path.write_bytes(dumps({"format": "xce-plan", "version": version,
                            "digest": digest_of(body), "body": body}))
    return path


def test_a_plan_of_the_older_format_is_refused_saying_plan_again(tmp_path: Path) -> None:
    """Version 1 (before a plan recorded its origin): where it applies cannot be known."""
    plan, _ = plan_scenario("datasets")
    body = {"destroy": False, "plan": plan.to_json()}
    path = _signed(tmp_path / "p.json", body, version=1)
    assert _code(path) == "XCE769"
    with pytest.raises(UserError) as info:
        load_plan(path)
    assert "older" in info.value.problems[0].message
    assert "xce-plan --out" in info.value.problems[0].hint


def test_a_plan_without_its_origin_is_malformed(tmp_path: Path) -> None:
    plan, _ = plan_scenario("datasets")
    for origin in (None, {**ORIGIN.to_json(), "workdir": 7}):
        body = {"destroy": False, "origin": origin, "plan": plan.to_json()}
        path = _signed(tmp_path / "p.json", body)
        assert _code(path) == "XCE764"


def test_malformed_body_with_valid_digest(tmp_path: Path) -> None:
    body = {"destroy": False, "origin": ORIGIN.to_json(), "plan": {"no_actions": True}}
    path = _signed(tmp_path / "p.json", body)
    assert _code(path) == "XCE764"


def test_an_unknown_verb_is_refused_when_the_file_is_read(tmp_path: Path) -> None:
    """The verb table decides at load time; before, such a plan failed only at apply."""
    plan, _ = plan_scenario("volumes_quotas")
    doc = plan.to_json()
    assert {a["action"] for a in doc["actions"]} <= {"create", "update"}  # the JSON field
    doc["actions"][0]["action"] = "explode"
    body = {"destroy": False, "origin": ORIGIN.to_json(), "plan": doc}
    path = _signed(tmp_path / "p.json", body)
    assert _code(path) == "XCE764"


def test_unwritable_target(tmp_path: Path) -> None:
    plan, _ = plan_scenario("datasets")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(UserError) as info:
        save_plan(blocker / "plan.json", plan, destroy=False, origin=ORIGIN)
    assert info.value.problems[0].code == "XCE765"


def test_fingerprint() -> None:
    e = Entry("host/cn01", "host", "available", "config", "ctl", owner="site/t")
    assert fingerprint(None) == "absent"
    assert fingerprint(e) == fingerprint(Entry.from_json(e.to_json()))
    assert fingerprint(e) != fingerprint(replace(e, state="draining"))


def test_stale_entries_names_what_changed_since_planning() -> None:
    plan, _ = plan_scenario("hosts_removed")
    _, live, _ = load_maps("hosts_removed")
    assert stale_entries(plan, live) == []
    changed = dict(live.entries)
    changed["host/cn02"] = replace(changed["host/cn02"], state="draining")
    del changed["counter/slots@host/cn04"]
    later = SupplyMap(changed, owner=live.owner)
    assert stale_entries(plan, later) == ["counter/slots@host/cn04", "host/cn02"]
