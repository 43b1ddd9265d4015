"""A live map says one thing, about this site (issue 20 §5): a key given twice in one object
is refused (XCE718) instead of read last-wins, and a snapshot exported for another site is
refused (XCE719) instead of planned as "No changes" (every entry co-managed)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

import reconciler.cmds.plan as plan_cli
from compiler.core.json_duplicates import duplicate_keys
from compiler.core.problems import UserError
from reconciler.live import load_live_snapshot
from tests.planner.scenario_io import SCENARIOS

NO_CHANGES = SCENARIOS / "no_changes"


def _live() -> dict[str, Any]:
    doc: dict[str, Any] = orjson.loads((NO_CHANGES / "live.json").read_bytes())
    return doc


def _plan(tmp_path: Path, live: bytes, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    shutil.copyfile(NO_CHANGES / "desired.json", tmp_path / "supply-map.json")
    (tmp_path / "bindings.json").write_text('{"providers": {}}')
    (tmp_path / "live.json").write_bytes(live)
    capsys.readouterr()
    code = plan_cli.main(["--desired", str(tmp_path / "supply-map.json"), "--live",
                          str(tmp_path / "live.json"), "--workdir", str(tmp_path / "work")])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _repeat(body: bytes, field: bytes, first: bytes) -> bytes:
    """``body`` with ``"field": first`` put before the first ``"field":`` (so it comes twice)."""
    at = body.index(b'"' + field + b'":')
    return body[:at] + b'"' + field + b'":' + first + b"," + body[at:]


def test_the_scenario_itself_plans_no_changes(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _plan(tmp_path, orjson.dumps(_live()), capsys)
    assert code == 0 and "No changes" in out


@pytest.mark.parametrize(("field", "first"), [(b"state", b'"lost"'), (b"owner", b'"site/x"'),
                                              (b"hosts", b'"cn[01-99]"'),
                                              (b"schema", b"1")])
def test_a_key_given_twice_is_refused(tmp_path: Path, field: bytes, first: bytes,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    body = _repeat(orjson.dumps(_live()), field, first)
    path = tmp_path / "twice.json"
    path.write_bytes(body)
    with pytest.raises(UserError) as caught:
        load_live_snapshot(path)
    (problem,) = caught.value.problems
    assert problem.code == "XCE718" and problem.where.file == str(path)
    assert repr(field.decode()) in problem.message and "more than once" in problem.message
    assert problem.where.ypath[-1] == field.decode()
    code, out = _plan(tmp_path, body, capsys)
    assert code == 1 and "XCE718" in out and "No changes" not in out


def test_the_repeats_are_named_where_they_are() -> None:
    doc = b'{"a": {"b": 1, "b": 2}, "l": [{"x": 1}, {"y": [1, {"z": 0, "z": 0, "z": 1}]}]}'
    assert duplicate_keys(doc) == [(("a",), "b"), (("l", 1, "y", 1), "z")]
    assert duplicate_keys(b'{"a": 1, "b": {"a": 2}}') == []  # one key per object is fine
    assert duplicate_keys(b"not json {") == []  # the decoder says what is wrong with it


def test_a_snapshot_exported_for_another_site_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _live()
    doc["owner"] = "site/other"
    code, out = _plan(tmp_path, orjson.dumps(doc), capsys)
    assert code == 1 and "XCE719" in out and "site/other" in out and "No changes" not in out


def test_a_snapshot_whose_entries_another_site_owns_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _live()
    del doc["owner"]  # no header to tell: the entries do
    for entry in doc["entries"]:
        if entry.get("owner"):
            entry["owner"] = "site/other"
    code, out = _plan(tmp_path, orjson.dumps(doc), capsys)
    assert code == 1 and "XCE719" in out and "none by site/t" in out


def test_some_entries_co_managed_by_another_site_are_planned(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _live()
    doc["entries"][0]["owner"] = "site/other"  # one co-managed entry: a plan, not a refusal
    code, out = _plan(tmp_path, orjson.dumps(doc), capsys)
    assert code == 0 and "XCE719" not in out
