"""``xce-map``: reporter events and ``show`` round-trips against a real map file."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from compiler.contract.provider_params import ControllerMapParams
from compiler.contract.supply_map import SupplyMap
from reconciler.cmds.map import main
from reconciler.providers.controller_map.provider import ControllerMapProvider
from tests.controller_map.cmap import Clock, host, live, ok

AT = "2027-01-15T09:30:00Z"
AT_SECONDS = int(datetime(2027, 1, 15, 9, 30, tzinfo=UTC).timestamp())


def xce_map(tmp_path: Path, *argv: str) -> list[str]:
    return ["--workdir", str(tmp_path), *argv]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def planned(tmp_path: Path) -> ControllerMapProvider:
    """A map with two hosts the plan created (expected), as the applier would leave it."""
    p = ControllerMapProvider("controller", ControllerMapParams(), tmp_path, now=Clock())
    ok(p, "create", entry=host("cn01"))
    ok(p, "create", entry=host("cn02"))
    return p


def test_join_then_available_moves_an_expected_host(
    tmp_path: Path, planned: ControllerMapProvider, capsys: pytest.CaptureFixture[str],
    snapshot: Any,
) -> None:
    code, out, err = run(capsys, *xce_map(tmp_path, "report", "join", "cn[01-02,07]", "--at", AT))
    assert (code, err) == (0, "")
    assert out == snapshot
    code, out, _ = run(capsys, *xce_map(tmp_path, "report", "available", "cn01", "--at", AT))
    assert code == 0
    entries = live(planned)
    assert entries["host/cn01"]["state"] == "available"
    assert entries["host/cn02"]["state"] == "joining"
    assert entries["host/cn07"]["source"] == "discovered"
    assert entries["host/cn01"]["spec"]["since"] == AT_SECONDS
    assert out.endswith("generation 4\n")


def test_show_text_and_json(
    tmp_path: Path, planned: ControllerMapProvider, capsys: pytest.CaptureFixture[str],
    snapshot: Any,
) -> None:
    run(capsys, *xce_map(tmp_path, "report", "join", "cn01,stray9", "--at", AT))
    code, out, _ = run(capsys, *xce_map(tmp_path, "show"))
    assert code == 0
    assert out == snapshot
    code, out, _ = run(capsys, *xce_map(tmp_path, "show", "--format", "json"))
    doc = orjson.loads(out)
    assert doc["generations"] == {"controller": 3}
    live_map = SupplyMap.from_json(doc)  # xce-plan --live reads this same shape
    assert live_map.entries["host/stray9"].source == "discovered"
    assert live_map.generations == {"controller": 3}
    code, out, _ = run(capsys, *xce_map(tmp_path, "show", "--kind", "counter", "--format", "json"))
    assert orjson.loads(out)["entries"] == []


def test_lost_and_drained_follow_the_lifecycle(
    tmp_path: Path, planned: ControllerMapProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, *xce_map(tmp_path, "report", "join", "cn01"))
    code, _, err = run(capsys, *xce_map(tmp_path, "report", "drained", "cn01"))
    assert code == 1 and "XCE733" in err and "draining" in err
    ok(planned, "update", id="host/cn01", action="drain")
    code, out, _ = run(capsys, *xce_map(tmp_path, "report", "drained", "cn01"))
    assert code == 0 and "draining → drained" in out
    code, out, _ = run(capsys, *xce_map(tmp_path, "report", "lost", "cn01"))
    assert code == 0 and "drained → lost" in out
    assert live(planned)["host/cn01"]["state"] == "lost"


def test_a_refused_batch_records_nothing(
    tmp_path: Path, planned: ControllerMapProvider, capsys: pytest.CaptureFixture[str],
    snapshot: Any,
) -> None:
    run(capsys, *xce_map(tmp_path, "report", "join", "cn01", "--at", AT))
    before = ok(planned, "inventory")
    code, out, err = run(capsys, *xce_map(tmp_path, "report", "lost", "cn[01-03]"))
    assert (code, out) == (1, "")
    assert err == snapshot
    assert ok(planned, "inventory") == before


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["report", "join", "cn[01-"], "XCE732"),
        (["report", "join", "cn01", "--at", "last tuesday"], "XCE735"),
        (["report", "avail", "cn01"], "XCE737"),
        (["show", "--kind", "hots"], "XCE736"),
        (["--provider", "nope", "show"], "XCE730"),
    ],
)
def test_bad_input_is_one_clear_error(
    tmp_path: Path, planned: ControllerMapProvider, capsys: pytest.CaptureFixture[str],
    argv: list[str], code: str,
) -> None:
    rc, out, err = run(capsys, *xce_map(tmp_path, *argv))
    assert rc == 1 and out == ""
    assert f"[{code}]" in err and "Traceback" not in err


def test_console_script_with_default_site_folder(tmp_path: Path) -> None:
    """Run as a user would: from the repository, with the map under site-config/.xce."""
    def xce(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "reconciler.cmds.map", *argv],
            cwd=tmp_path, capture_output=True, text=True, check=False,
        )

    (tmp_path / "site-config").mkdir()  # the site is found there (compiler/cli/site_locate.py)
    (tmp_path / "site-config" / "site.yaml").write_text("version: 1\nsite: {name: east}\n")
    joined = xce("report", "join", "gn[1-3]", "--at", AT)
    assert joined.returncode == 0, joined.stderr
    assert "site: site-config/ (found in the current folder)" in joined.stderr
    assert (tmp_path / "site-config/.xce/providers/controller/map.sqlite").is_file()
    shown = xce("show", "--format", "json")
    entries = orjson.loads(shown.stdout)["entries"]
    assert [e["id"] for e in entries] == ["host/gn1", "host/gn2", "host/gn3"]
    assert {e["state"] for e in entries} == {"joining"}
    broken = xce("report", "available", "gn1")
    assert broken.returncode == 1
    assert "awaiting admission" in broken.stderr and "Traceback" not in broken.stderr
