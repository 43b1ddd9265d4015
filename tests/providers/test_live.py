"""The live map from real providers, with some of them missing, slow, lying or partial."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from compiler.cli.problem_render import render_text
from compiler.core.problems import Severity, UserError
from reconciler.live import gather_live, load_live_snapshot
from reconciler.providers.registry import open_provider
from tests.helpers import ok
from tests.providers.kit import OWNER, notes_binding


def bindings(tmp_path: Path, providers: dict[str, Any]) -> dict[str, Any]:
    return {"providers": providers, "proxies": {}}


def seeded_notes(tmp_path: Path, name: str, state: Path | None = None, **kw: Any) -> dict[str, Any]:
    """A notes provider binding that already holds note/<name>-1."""
    binding = notes_binding(tmp_path, name, state=state, **kw)
    good = notes_binding(tmp_path, name, state=state)
    t = open_provider(name, good, tmp_path)
    ok(t, "create", op_id=f"seed-{name}", epoch=1, owner=OWNER,
       params={"entry": {"id": f"note/{name}-1"}})
    return binding


@pytest.fixture
def mixed(tmp_path: Path) -> dict[str, Any]:
    fs = {"kind": "directory", "params": {}}
    t = open_provider("shared-fs", fs, tmp_path)
    ok(t, "create", op_id="v", epoch=1, owner=OWNER,
       params={"entry": {"id": "volume/shared", "spec": {"path": "/shared"}}})
    t.close()
    return bindings(tmp_path, {
        "shared-fs": fs,
        "cache-gpu": {"kind": "dataset-copy", "params": {"location": "group/gpu"}},
        "notes": seeded_notes(tmp_path, "notes"),
        "lines": seeded_notes(tmp_path, "lines", kind="jsonl"),
        "ghost": {"kind": "exec", "command": [str(tmp_path / "no-such-provider")]},
        "sloth": notes_binding(tmp_path, "sloth", mode="slow", timeout=1),
        "sloth2": notes_binding(tmp_path, "sloth2", mode="slow", timeout=1),
        "liar": seeded_notes(tmp_path, "liar", mode="garbage"),
        "fibber": seeded_notes(tmp_path, "fibber", mode="bad-entry"),
        "halfway": seeded_notes(tmp_path, "halfway", mode="partial"),
        "typo": {"kind": "dirctory"},
    })


def test_failing_providers_are_unknown_and_named(
    tmp_path: Path, mixed: dict[str, Any], snapshot: Any
) -> None:
    start = time.monotonic()
    result = gather_live(mixed, tmp_path, OWNER)
    elapsed = time.monotonic() - start
    assert elapsed < 1.9, "providers must be asked in parallel (two take 1 s each)"
    live = result.live
    assert sorted(live.entries) == ["note/lines-1", "note/notes-1", "volume/shared"]
    assert sorted(live.unknown) == ["fibber", "ghost", "halfway", "liar", "sloth", "sloth2",
                                    "typo"]
    assert sorted(live.generations) == ["cache-gpu", "halfway", "lines", "notes", "shared-fs"]
    assert live.owner == OWNER and live.site == "test"
    for name in live.unknown:  # partial or not: none of their entries is in the map
        assert not any(e.provider == name for e in live.entries.values())
    by_subject = {p.subject: p for p in result.problems}
    assert set(by_subject) == set(live.unknown)
    assert by_subject["typo"].severity is Severity.ERROR
    assert by_subject["sloth"].severity is Severity.WARNING
    text = render_text(sorted(result.problems, key=lambda p: p.subject or ""))
    assert text.replace(str(tmp_path), "<tmp>") == snapshot


def test_an_entry_reported_by_two_providers_is_trusted_from_neither(tmp_path: Path) -> None:
    """Which provider holds it is what is in question: the first name no longer wins."""
    shared = tmp_path / "one-state.json"
    b = bindings(tmp_path, {
        "a": seeded_notes(tmp_path, "a", state=shared),
        "b": notes_binding(tmp_path, "b", state=shared),
    })
    result = gather_live(b, tmp_path, OWNER)
    assert "note/a-1" not in result.live.entries
    assert result.live.unknown == {}  # both providers answered; only the entry is in doubt
    why = result.live.unknown_entries["note/a-1"]
    assert "'a' and 'b'" in why and "neither report is trusted" in why
    [problem] = result.problems
    assert problem.code == "XCE706" and problem.severity is Severity.ERROR
    assert problem.subject == "note/a-1" and "'a' and 'b'" in problem.message


def test_only_restricts_the_providers_asked(tmp_path: Path) -> None:
    b = bindings(tmp_path, {"notes": seeded_notes(tmp_path, "notes"),
                            "ghost": {"kind": "exec", "command": ["/nonexistent"]}})
    result = gather_live(b, tmp_path, OWNER, only=["notes", "nosuch"])
    assert list(result.live.entries) == ["note/notes-1"]
    assert result.live.unknown == {"ghost": "not asked (restricted to other providers)"}
    assert [(p.code, p.subject) for p in result.problems] == [("XCE710", "nosuch")]


def test_bindings_without_providers_is_a_problem(tmp_path: Path) -> None:
    result = gather_live({"proxies": {}}, tmp_path, OWNER)
    assert [p.code for p in result.problems] == ["XCE711"]


def test_live_snapshot_round_trip(tmp_path: Path, mixed: dict[str, Any]) -> None:
    live = gather_live(mixed, tmp_path, OWNER).live
    path = tmp_path / "live.json"
    path.write_bytes(live.dumps())
    loaded = load_live_snapshot(path)
    assert loaded.entries == live.entries
    assert loaded.unknown == live.unknown and loaded.generations == live.generations


def load_problems(path: Path) -> list[tuple[str, Any, Any, Any]]:
    with pytest.raises(UserError) as err:
        load_live_snapshot(path)
    return [(p.code, p.where and p.where.ypath, p.line, p.message) for p in err.value.problems]


def test_live_snapshot_errors_name_the_file_and_place(tmp_path: Path) -> None:
    path = tmp_path / "live.json"
    assert load_problems(path)[0][0] == "XCE707"
    path.write_text('{"entries": [\n  {"id": "host/a",}\n]}')
    [(code, _, line, _)] = load_problems(path)
    assert (code, line) == ("XCE708", 2)
    path.write_bytes(orjson.dumps({"entries": [
        {"id": "host/a", "kind": "host", "state": "available", "source": "config"},
        {"id": "host/a", "kind": "host", "state": "available", "source": "config"},
        {"id": "counter/x", "kind": "host", "state": "available", "source": "config",
         "amount": "12"},
        {"kind": "host"},
    ]}))
    assert load_problems(path) == [
        ("XCE709", ("entries", 1, "id"), None, "entry host/a is listed twice"),
        ("XCE709", ("entries", 2, "amount"), None,
         "entry #2: 'amount' must be an integer in base units"),
        ("XCE709", ("entries", 3, "id"), None, "entry #3: 'id' must be a non-empty string"),
        ("XCE709", ("entries", 3, "state"), None, "entry #3: 'state' must be a non-empty string"),
        ("XCE709", ("entries", 3, "source"), None,
         "entry #3: 'source' must be a non-empty string"),
    ]
    path.write_text("[]")
    assert [p[0] for p in load_problems(path)] == ["XCE709"]
