"""End to end: a real site-config, real providers (directories, a dataset cache, the SQLite
controller map, the cloud simulator over exec), live state built by setup steps, and the
plan ``xce-plan --format json`` prints, with its exit code and the plan file it saves.

``expected.yaml`` keys are described in tests/e2e/README.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from reconciler.plan.file import load_plan
from reconciler.plan.model import NOTE_LISTS
from tests.e2e.scenario import build, load_scenario, scenario_names
from tests.e2e.workspace import run_plan


def test_the_corpus_covers_the_issue() -> None:
    assert len(scenario_names()) >= 12


def _check_plan(doc: dict[str, Any], expected: dict[str, Any]) -> None:
    if "actions" in expected:  # left out where a long list would say less than the summary
        assert [[a["action"], a["entry"]] for a in doc["actions"]] == expected["actions"]
    for name in NOTE_LISTS:
        assert sorted(n["entry"] for n in doc[name]) == sorted(expected.get(name, [])), name
    assert [[p["code"], p["severity"]] for p in doc["problems"]] == expected.get("problems", [])
    assert doc["blocked"] is expected.get("blocked", False)
    for key, count in expected.get("summary", {}).items():
        assert doc["summary"][key] == count, key
    actions = {a["id"]: a for a in doc["actions"]}
    for action_id, deps in expected.get("depends_on", {}).items():
        assert actions[action_id]["depends_on"] == deps, action_id
    for action_id, changes in expected.get("changes", {}).items():
        got = [[c["path"], c["before"], c["after"]] for c in actions[action_id]["changes"]]
        assert got == changes, action_id
    for action_id, text in expected.get("reasons", {}).items():
        assert text in actions[action_id]["reason"], (action_id, actions[action_id]["reason"])
    notes = {n["entry"]: n["reason"] for name in NOTE_LISTS for n in doc[name]}
    for entry, text in expected.get("note_reasons", {}).items():
        assert text in notes[entry], (entry, notes[entry])


@pytest.mark.parametrize("name", scenario_names())
def test_scenario(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                  monkeypatch: pytest.MonkeyPatch) -> None:
    scenario = load_scenario(name)
    ws = build(scenario, tmp_path, monkeypatch)
    saved = tmp_path / "plan.xce"

    run = run_plan(ws, capsys, monkeypatch, "--format", "json", "--out", str(saved),
                   *scenario.plan_args)

    assert "Traceback" not in run.err
    expected = scenario.expected
    doc = orjson.loads(run.out)
    _check_plan(doc, expected)
    for text in expected.get("stderr", []):
        assert text in run.err, text
    assert run.code == expected["exit"], run.err
    if doc["blocked"]:
        assert not saved.exists()  # a refused plan is never handed to xce-apply
    else:
        plan = load_plan(saved).plan
        assert [a.to_json() for a in plan.actions] == doc["actions"]
