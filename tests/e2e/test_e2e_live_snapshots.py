"""``xce-plan --live FILE`` on a corpus of live-map snapshots (tests/e2e/live_snapshots/).

Valid snapshots are planned against the example site and must give the counts listed in
``expected.yaml``; broken ones must end in exit 1 with one clear error line that names the
file — never a traceback, never a plan on stdout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from ruamel.yaml import YAML

import reconciler.cmds.plan as plan_cli
from compiler.cmds import compile as compile_cli
from tests.conftest import EXAMPLE_SITE
from tests.e2e.workspace import E2E

CORPUS = E2E / "live_snapshots"
EXPECTED: dict[str, Any] = YAML(typ="safe").load((CORPUS / "expected.yaml").read_text())


def _plan(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = plan_cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example compiled once (``xce-compile --out``): broken snapshots fail after
    the desired map is read, so they need not compile the site each time."""
    out = tmp_path_factory.mktemp("build")
    assert compile_cli.main([str(EXAMPLE_SITE), "--out", str(out)]) == 0
    return out / "supply-map.json"


@pytest.mark.parametrize("folder", ["valid", "broken"])
def test_every_snapshot_has_an_expectation(folder: str) -> None:
    assert sorted(p.name for p in (CORPUS / folder).iterdir()) == sorted(EXPECTED[folder])


@pytest.mark.parametrize("name", sorted(EXPECTED["valid"]))
def test_valid_snapshot(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expected = EXPECTED["valid"][name]
    code, out, err = _plan(capsys, str(EXAMPLE_SITE), "--live", str(CORPUS / "valid" / name),
                           "--workdir", str(tmp_path), "--format", "json")
    doc = orjson.loads(out)
    assert {k: doc["summary"][k] for k in expected["summary"]} == expected["summary"]
    assert [[p["code"], p["subject"]] for p in doc["problems"]] == expected["problems"]
    assert code == expected["exit"], err
    assert "Traceback" not in err
    assert not any(tmp_path.iterdir())  # a snapshot plan asks no provider


@pytest.mark.parametrize("name", sorted(EXPECTED["broken"]))
def test_broken_snapshot(name: str, compiled: Path, tmp_path: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    expected = EXPECTED["broken"][name]
    path = CORPUS / "broken" / name
    for fmt in ("json", "text"):
        code, out, err = _plan(capsys, "--desired", str(compiled), "--live", str(path),
                               "--workdir", str(tmp_path), "--format", fmt)
        assert code == 1  # no plan; with --format json, the problems as a document
        assert out == "" if fmt == "text" else \
            [p["code"] for p in json.loads(out)["problems"]] == [expected["code"]]
        first = err.splitlines()[0]
        where = f"{path}:{expected['line']}:" if "line" in expected else f"{path}: "
        assert first.startswith(where), first
        assert f"error[{expected['code']}]: {expected['message']}" in first
        assert "Traceback" not in err and "internal error" not in err


def test_missing_snapshot(compiled: Path, tmp_path: Path,
                          capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nowhere.json"
    code, out, err = _plan(capsys, "--desired", str(compiled), "--live", str(missing))
    assert (code, out) == (1, "")
    assert err.startswith(f"{missing}: error[XCE707]: cannot read live map: No such file")
