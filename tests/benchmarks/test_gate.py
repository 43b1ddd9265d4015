"""The benchmark gate: a ratio more than 15 % worse than recorded fails, naming the workload,
its ratio and the recorded one; within 15 % passes; better passes and says so; figures that
lack a workload are an error. One real run at 200 hosts yields every workload's ratio."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from benchmarks import gate
from benchmarks.gate_figures import (
    BETTER,
    SAME,
    WORSE,
    Figures,
    GateError,
    Measured,
    compare,
    load,
    save,
)
from benchmarks.gate_inputs import Inputs
from benchmarks.gate_workloads import PLANS

HOSTS = 200
WORKLOADS = ["compile", "decode", *PLANS]


def _measured(ratio: float, name: str = "plan-1pct") -> Measured:
    return Measured(name, "decode", cpu=ratio * 0.5, floor_cpu=0.5, ratio=ratio)


def _figures(ratios: dict[str, float]) -> Figures:
    return Figures(HOSTS, 863, 5, "test machine", "2026-12-02", "0" * 40,
                   {n: _measured(r, n) for n, r in ratios.items()})


@pytest.mark.parametrize(("ratio", "status"), [(2.32, WORSE), (2.28, SAME), (2.0, SAME),
                                               (1.6, BETTER)])
def test_a_ratio_is_judged_against_the_recorded_one(ratio: float, status: str) -> None:
    (verdict,) = compare([_measured(ratio)], _figures({"plan-1pct": 2.0}), HOSTS)
    assert verdict.status == status
    assert verdict.change == pytest.approx(ratio / 2.0 - 1)


def test_figures_without_a_workload_are_an_error() -> None:
    with pytest.raises(GateError, match="no recorded figure for plan-empty"):
        compare([_measured(2.0), _measured(3.0, "plan-empty")],
                _figures({"plan-1pct": 2.0}), HOSTS)


def test_figures_of_another_size_are_an_error() -> None:
    with pytest.raises(GateError, match="recorded at 200 hosts, this run has 20,000"):
        compare([_measured(2.0)], _figures({"plan-1pct": 2.0}), 20_000)


def test_the_figures_read_back_as_written(tmp_path: Path) -> None:
    figures = _figures({"compile": 2.5, "plan-1pct": 3.25})
    save(tmp_path / "figures.json", figures)
    assert load(tmp_path / "figures.json") == figures


@pytest.fixture
def measuring(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[Measured]:
    """The gate's command with made-up measurements: what it prints and exits on."""
    measured: list[Measured] = []
    inputs = Inputs(tmp_path, tmp_path, {}, tmp_path, tmp_path, entries=863)
    monkeypatch.setattr(gate, "prepare", lambda cache, hosts: inputs)
    monkeypatch.setattr(gate, "measure", lambda inputs, rounds: measured)
    return measured


def _gate(tmp_path: Path, recorded: dict[str, float], *argv: str) -> int:
    save(tmp_path / "figures.json", _figures(recorded))
    return gate.main(["--hosts", str(HOSTS), "--dir", str(tmp_path), "--figures",
                      str(tmp_path / "figures.json"), *argv])


def test_a_ratio_16_percent_worse_fails_naming_it(
        measuring: list[Measured], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    measuring += [_measured(2.32), _measured(2.0, "compile")]
    assert _gate(tmp_path, {"plan-1pct": 2.0, "compile": 2.0}) == 1
    out, err = capsys.readouterr()
    assert "FAIL plan-1pct: ratio 2.32 to its floor (decode), recorded 2.00 (+16.0%)" in err
    assert "compile" not in err
    assert "plan-1pct" in out and "+16.0%" in out and "worse" in out


def test_a_ratio_14_percent_worse_passes(
        measuring: list[Measured], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    measuring.append(_measured(2.28))
    assert _gate(tmp_path, {"plan-1pct": 2.0}) == 0
    out, err = capsys.readouterr()
    assert "+14.0%" in out and err == ""


def test_a_better_ratio_passes_and_says_so(
        measuring: list[Measured], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    measuring.append(_measured(1.5))
    assert _gate(tmp_path, {"plan-1pct": 2.0}, "--format", "json") == 0
    out, err = capsys.readouterr()
    (row,) = orjson.loads(out)["workloads"]
    assert (row["status"], row["change"]) == (BETTER, -0.25)
    assert "better: record it (scripts/bench.sh --record) to keep the gain" in err


def test_a_workload_missing_from_the_figures_is_an_error(
        measuring: list[Measured], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    measuring += [_measured(2.0), _measured(2.0, "plan-empty")]
    assert _gate(tmp_path, {"plan-1pct": 2.0}) == 2
    assert "no recorded figure for plan-empty" in capsys.readouterr().err


def test_no_figures_is_an_error_before_anything_is_measured(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = gate.main(["--dir", str(tmp_path), "--figures", str(tmp_path / "none.json")])
    assert code == 2
    assert "no recorded figures" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_real_run_yields_every_workloads_ratio(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    figures = tmp_path / "figures.json"
    argv = ["--hosts", str(HOSTS), "--rounds", "1", "--dir", str(tmp_path / "cache"),
            "--figures", str(figures), "--format", "json"]
    assert gate.main([*argv, "--record"]) == 0
    run = orjson.loads(capsys.readouterr().out)
    assert [w["workload"] for w in run["workloads"]] == WORKLOADS
    assert all(w["ratio"] > 0 and w["cpu_s"] > 0 for w in run["workloads"])
    assert run["entries"] > HOSTS
    assert sorted(orjson.loads(figures.read_bytes())["workloads"]) == sorted(WORKLOADS)
