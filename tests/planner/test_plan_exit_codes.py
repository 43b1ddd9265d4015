"""``xce-plan`` exits 2 only when there are actions to apply (issue 10 §5): what it only
reports — orphans it will not release, drift it does not correct — is listed, exit 0."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

import reconciler.cmds.plan as plan_cli
from tests.planner.scenario_io import SCENARIOS, plan_scenario


def _xce_plan(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
              fmt: str = "text") -> tuple[int, str]:
    """xce-plan of a scenario's desired map against its live map (a snapshot file)."""
    folder = SCENARIOS / name
    shutil.copyfile(folder / "desired.json", tmp_path / "supply-map.json")
    (tmp_path / "bindings.json").write_text('{"providers": {}}')
    capsys.readouterr()
    code = plan_cli.main(["--desired", str(tmp_path / "supply-map.json"), "--live",
                          str(folder / "live.json"), "--workdir", str(tmp_path / "work"),
                          "--format", fmt])
    return code, capsys.readouterr().out


@pytest.mark.parametrize(("name", "reported"), [("discovery_report", "orphans"),
                                                ("provider_mismatch", "drift_reported")])
def test_only_reported_findings_exit_0(name: str, reported: str, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    plan, _ = plan_scenario(name)
    assert not plan.actions and getattr(plan, reported)  # what the scenario is about
    code, out = _xce_plan(name, tmp_path, capsys)
    assert code == 0
    assert out.rstrip().endswith("No actions to apply; what is reported above (2 entries: "
                                 "orphans, drift not corrected) is not acted on.")
    code, out = _xce_plan(name, tmp_path, capsys, "json")
    doc = orjson.loads(out)
    assert code == 0 and doc["actions"] == [] and len(doc[reported]) == 2


def test_one_action_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan, _ = plan_scenario("management_levels")
    assert len(plan.actions) == 1 and plan.orphans and plan.drift_reported
    code, out = _xce_plan("management_levels", tmp_path, capsys)
    assert code == 2
    assert out.rstrip().endswith("Plan: 1 to add, 0 to change, 0 to destroy.")


def test_nothing_at_all_says_no_changes(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _xce_plan("no_changes", tmp_path, capsys)
    assert code == 0
    assert out.rstrip().endswith("No changes. The live supply matches the configuration.")
