"""``xce-drift`` against a real drifted world (tests/drift/world.py): every kind of drift,
grouped and with desired beside live; exit codes 0/2/1; the drift ledger is the only write;
a second run knows since when each drift stands."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import orjson
import pytest

from reconciler.drift import codes
from reconciler.pipeline import compile_desired, gather
from reconciler.state import Holder, open_store
from tests.drift.conftest import Drift
from tests.drift.world import clock, run_drift
from tests.e2e.workspace import Workspace, planning

GIB = 2**30


def by_entry(out: str) -> dict[str, dict[str, Any]]:
    return {f["entry"]: f for f in orjson.loads(out)["findings"]}


def fields(finding: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    return {f["path"]: (f["desired"], f["live"]) for f in finding["fields"]}


def test_every_kind_of_drift_is_reported_with_desired_beside_live(drift: Drift) -> None:
    run = drift("--format", "json")
    assert run.code == 2, run.err
    found = by_entry(run.out)
    assert {e: f["category"] for e, f in found.items()} == {
        "counter/capacity@volume/shared": "differs",  # the capacity as a pool counter (PR-6)
        "host/cn02": "not-corrected",  # an admin drained it: the plan never undoes that
        "license/ansys@site": "co-managed",
        "provider/cloud": "unknown",
        "quota/shared/user/alice": "not-corrected",  # management `report`
        "volume-dir/shared/bob": "missing",
        "volume/shared": "differs",
    }
    assert fields(found["host/cn02"]) == {"state": ("available", "drained")}
    assert fields(found["quota/shared/user/alice"]) == {"amount": (15 * GIB, 10 * GIB)}
    assert fields(found["volume/shared"]) == {"amount": (200 * GIB, 100 * GIB)}
    assert fields(found["counter/capacity@volume/shared"]) == {"amount": (200 * GIB, 100 * GIB)}
    assert found["volume-dir/shared/bob"]["fix"].startswith("xce-plan ")
    assert "--target volume-dir/shared/bob" in found["volume-dir/shared/bob"]["fix"]
    assert found["quota/shared/user/alice"]["fix"] is None
    # the cloud's instances are unknown, never missing: they are not findings of their own
    assert found["provider/cloud"]["count"] == 2
    assert not any(e.startswith("instance/") for e in found)
    assert "warning[XCE701]" in run.err


def test_the_text_groups_drift_by_kind_and_provider(drift: Drift) -> None:
    text = drift().out
    kinds = [line for line in text.splitlines() if line.startswith("== ")]
    assert kinds == ["== counter (1)", "== host (1)", "== quota (1)", "== volume (1)",
                     "== volume-dir (1)",
                     "== Co-managed: not ours, never touched (1)",
                     "== Unknown: cannot tell, never taken as absent (1)", "== Problems"]
    assert "  provider shared-fs\n    not-corrected  quota/shared/user/alice" in text
    assert 'amount: desired 16106127360;  live 10737418240' in text


def _world_state(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Every provider's inventory and generation, as a gather sees them."""
    with planning(ws, monkeypatch):
        live = gather(compile_desired(ws.site), ws.workdir).supply
    return ({k: e.to_json() for k, e in live.entries.items()}, dict(live.generations))


def _rows(path: Path, table: str) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(path)) as db:
        return db.execute(f"SELECT * FROM {table}").fetchall()


def test_it_changes_nothing_but_the_drift_ledger(drift: Drift, world: Workspace,
                                                 tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    before = _world_state(world, monkeypatch)
    assert drift().code == 2
    assert _world_state(world, monkeypatch) == before  # no provider was changed
    state = tmp_path / "state.sqlite"
    assert len(_rows(state, "drift_ledger")) == 7 and len(_rows(state, "drift_history")) == 1
    assert _rows(state, "provider_generations") == []  # generations checked, not recorded
    assert drift("--no-record").code == 2
    assert len(_rows(state, "drift_history")) == 1
    elsewhere = tmp_path / "none" / "state.sqlite"
    assert drift("--no-record", "--state", str(elsewhere)).code == 2
    assert not elsewhere.exists()
    assert run_drift(world, capsys, monkeypatch, "--no-record").code == 2
    assert not (world.workdir / "state.sqlite").exists()  # the default store, not made


def test_a_later_run_says_since_when_and_what_is_news(drift: Drift, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    assert "Not notified yet: 7 new, 0 changed, 0 resolved" in drift().out
    first = drift("--format", "json")
    first_seen = by_entry(first.out)["host/cn02"]["since"]
    assert orjson.loads(first.out)["since_last"]["last_notified"] is None
    assert "Not notified yet" not in drift("--no-record").out  # the ledger not read as news
    with clock(monkeypatch, 3 * 86400 + 60):
        later = drift()
        doc = orjson.loads(drift("--format", "json").out)
    assert "host/cn02  (since 3 days)" in later.out
    assert {f["entry"]: f["since"] for f in doc["findings"]}["host/cn02"] == first_seen
    assert len(doc["since_last"]["new"]) == 7
    with open_store(str(tmp_path / "state.sqlite"), tmp_path / "unused") as store:
        pending = store.claim_notifications("e2e", Holder("mailer", "ci"), ttl=30)
        store.mark_notified("e2e", pending.fingerprints, holder="mailer")
    again = orjson.loads(drift("--format", "json").out)["since_last"]
    assert (again["new"], again["changed"], again["resolved"]) == ([], [], [])
    assert again["last_notified"] is not None


def test_out_writes_each_format_its_suffix_names(drift: Drift, tmp_path: Path) -> None:
    files = [tmp_path / "out" / name for name in ("r.html", "r.json", "r.md", "r.txt")]
    run = drift(*(arg for f in files for arg in ("--out", str(f))))
    assert run.code == 2
    assert files[0].read_text().startswith("<!DOCTYPE html>")
    assert orjson.loads(files[1].read_bytes())["site"] == "e2e"
    assert files[2].read_text().startswith("## Drift of site `e2e`")
    assert files[3].read_text() == run.out
    assert f"Wrote the drift report to {files[0]}" in run.err


def test_usage_mistakes_exit_1_before_anything_runs(drift: Drift, tmp_path: Path) -> None:
    bad = drift("--out", str(tmp_path / "report.pdf"))
    assert bad.code == 1 and f"error[{codes.USAGE}]" in bad.err and "report.pdf" in bad.err
    assert drift("--no-such-option").code == 1
    assert drift("--format", "xml").code == 1
    assert not (tmp_path / "state.sqlite").exists()


def test_a_broken_template_stops_the_run_before_any_provider(drift: Drift,
                                                             tmp_path: Path) -> None:
    folder = tmp_path / "tpl"
    folder.mkdir()
    (folder / "report.html.j2").write_text("<p>\n{% if report.site %}\n")
    run = drift("--templates", str(folder), "--out", str(tmp_path / "r.html"))
    assert run.code == 1
    assert f"{folder / 'report.html.j2'}:2:1: error[{codes.TEMPLATE_SYNTAX}]" in run.err
    assert "'if'" in run.err  # jinja2's own words: which block is left open
    assert "Traceback" not in run.err
    assert not (tmp_path / "state.sqlite").exists() and not (tmp_path / "r.html").exists()


def test_no_drift_exits_0(drift: Drift, world: Workspace, tmp_path: Path) -> None:
    """Against a live map that is exactly the desired one, nothing differs."""
    snapshot = tmp_path / "live.json"
    snapshot.write_bytes(compile_desired(world.site).supply.dumps())
    run = drift("--live", str(snapshot))
    assert run.code == 0, run.out
    assert "No drift." in run.out
    assert orjson.loads(drift("--live", str(snapshot), "--format", "json").out)["drift"] is False
