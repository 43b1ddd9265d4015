"""Secrets are used by reference and never printed: not in any rendering of ``xce-plan``,
not on stderr, not in the saved plan file — even when a provider echoes the value back.

The scenario ``secret_echoed`` binds the cloud provider with ``credentials: {api_token:
env:XCE_TEST_TOKEN}`` and a secret-named param that is a reference; its provider
resolves the token (it refuses to work without it) and reports it inside every instance,
on entries the plan updates and releases.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.e2e.scenario import build, load_scenario
from tests.e2e.workspace import run_plan

SCENARIO = "secret_echoed"


def test_the_token_is_never_printed_nor_saved(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    scenario = load_scenario(SCENARIO)
    ws = build(scenario, tmp_path, monkeypatch)  # the apply already needed the token
    token = ws.env["XCE_TEST_TOKEN"]

    outputs: dict[str, str] = {}
    for fmt in ("text", "json", "markdown"):
        saved = tmp_path / f"plan-{fmt}.xce"
        run = run_plan(ws, capsys, monkeypatch, "--format", fmt, "--out", str(saved))
        assert run.code == 2, run.err
        outputs[fmt] = run.out
        outputs[f"{fmt} stderr"] = run.err
        outputs[f"{fmt} plan file"] = saved.read_text()
    for where, text in outputs.items():
        assert token not in text, f"the token leaked into the {where}"

    # The provider did echo it: the plan shows that a secret was there, masked.
    doc = orjson.loads(outputs["json"])
    update = next(a for a in doc["actions"] if a["id"] == "update:instance/burst01")
    assert update["before"]["spec"]["api_token"] == "(sensitive)"
    assert update["before"]["spec"]["auth"] == {"token": "(sensitive)"}
    release = next(a for a in doc["actions"] if a["id"] == "release:instance/burst02")
    assert release["before"]["spec"]["api_token"] == "(sensitive)"
