"""The controller map's serving session and ``spec.seen`` (P8), on a real map file.

After a controller restart the planner waits before it removes anything no config
claims; it needs the session's start from ``inventory`` and, per host, when a reporter
last told of it, even by an event that changed nothing (a rejoin of an available host).
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from compiler.contract.provider_params import ControllerMapParams
from compiler.contract.supply_map import Session, SupplyMap
from reconciler.cmds.map import main
from reconciler.live import gather_live
from reconciler.providers.controller_map.lifecycle import Event
from reconciler.providers.controller_map.provider import ControllerMapProvider
from reconciler.providers.controller_map.reporter import record
from tests.controller_map.cmap import T0, Clock, generation, host, live, ok

RESTART = "2027-01-15T10:00:00Z"
RESTART_S = int(datetime(2027, 1, 15, 10, tzinfo=UTC).timestamp())


def session(provider: ControllerMapProvider) -> dict[str, Any]:
    result = ok(provider, "inventory")
    assert set(result["session"]) == {"id", "since"}
    return dict(result["session"])


def xce(tmp_path: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["--workdir", str(tmp_path), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def available(provider: ControllerMapProvider, *names: str) -> None:
    for name in names:
        ok(provider, "create", entry=host(name))
    record(provider.store, Event.JOIN, names, T0, provider.name)
    record(provider.store, Event.AVAILABLE, names, T0, provider.name)


def test_a_new_map_has_a_session_that_stays_across_inventories_and_reopens(
    tmp_path: Path, provider: ControllerMapProvider, clock: Clock
) -> None:
    first = session(provider)
    assert first["since"] == int(T0) and isinstance(first["id"], str) and first["id"]
    clock.advance(3600)
    ok(provider, "create", entry=host("cn1"))
    assert session(provider) == first  # changes are not restarts
    provider.close()
    again = ControllerMapProvider("controller", ControllerMapParams(), tmp_path, now=clock)
    assert session(again) == first  # nor is opening the file again (an apply, a plan)
    other = ControllerMapProvider("other", ControllerMapParams(), tmp_path, now=clock)
    assert session(other)["id"] != first["id"]  # another map, another session
    again.close()
    other.close()


def test_restart_renews_the_session_and_says_workers_must_rejoin(
    tmp_path: Path, provider: ControllerMapProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    available(provider, "cn1", "cn2")
    ok(provider, "create", entry=host("cn3"))  # expected: never joined, nothing to rejoin
    before, gen = session(provider), generation(provider)
    code, out, err = xce(tmp_path, capsys, "restart", "--at", RESTART)
    assert (code, err) == (0, "")
    after = session(provider)
    assert after["since"] == RESTART_S and after["id"] != before["id"]
    assert out.splitlines()[0] == (
        f"controller map controller: new session {after['id']} since {RESTART} "
        f"(was {before['id']} since 2027-01-15T08:00:00Z)")
    assert "workers must rejoin: 2 host(s) joining, available or draining" in out
    assert generation(provider) == gen  # the entries did not change
    assert live(provider)["host/cn1"]["state"] == "available"  # nor did any state


def test_restart_never_creates_a_map(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = xce(tmp_path, capsys, "restart")
    assert (code, out) == (1, "") and "[XCE730]" in err and "no controller map" in err
    assert not (tmp_path / "providers").exists()


def test_a_rejoin_that_changes_no_state_records_seen(
    tmp_path: Path, provider: ControllerMapProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    available(provider, "cn1", "cn2")
    assert live(provider)["host/cn1"]["spec"]["seen"] == int(T0)
    gen = generation(provider)
    code, out, _ = xce(tmp_path, capsys, "report", "join", "cn1", "--at", RESTART)
    assert code == 0 and "host/cn1: already available" in out
    cn1, cn2 = live(provider)["host/cn1"], live(provider)["host/cn2"]
    assert cn1["state"] == "available"
    assert cn1["spec"]["seen"] == RESTART_S and cn1["spec"]["since"] == int(T0)
    assert cn2["spec"]["seen"] == int(T0)  # not reported again: not seen again
    assert generation(provider) == gen + 1  # the snapshot changed, so its generation did
    record(provider.store, Event.JOIN, ["cn1"], RESTART_S - 600, provider.name)  # late report
    assert live(provider)["host/cn1"]["spec"]["seen"] == RESTART_S  # never moves back


def test_seen_is_kept_across_a_plan_update_and_never_set_by_a_plan(
    provider: ControllerMapProvider,
) -> None:
    available(provider, "cn1")
    record(provider.store, Event.JOIN, ["cn1"], T0 + 300, provider.name)
    ok(provider, "update", entry=host("cn1", rack="r7"))
    ok(provider, "update", id="host/cn1", changes={"spec": {"join_deadline": 60, "seen": 1}})
    spec = live(provider)["host/cn1"]["spec"]
    assert spec == {"join_deadline": 60, "since": int(T0), "seen": int(T0) + 300}
    assert live(provider)["host/cn1"]["attributes"]["rack"] == "r7"
    planted = host("cn9") | {"spec": {"join_deadline": 1800, "seen": int(T0) + 9999}}
    assert "seen" not in ok(provider, "create", entry=planted)["entry"]["spec"]


def test_show_json_carries_the_session_as_a_live_map_does(
    tmp_path: Path, provider: ControllerMapProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    available(provider, "cn1")
    code, out, _ = xce(tmp_path, capsys, "show", "--format", "json")
    doc = orjson.loads(out)
    assert code == 0 and doc["sessions"] == {"controller": session(provider)}
    assert "host/cn1" in SupplyMap.from_json(doc).entries


def test_the_live_map_carries_the_session_after_a_restart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The contract end to end: the built-in binding's inventory, gathered as xce-plan does."""
    assert xce(tmp_path, capsys, "report", "join", "cn1")[0] == 0
    assert xce(tmp_path, capsys, "restart", "--at", RESTART)[0] == 0
    shown = orjson.loads(xce(tmp_path, capsys, "show", "--format", "json")[1])
    bindings = {"providers": {"controller": {"kind": "controller-map"}}, "proxies": {}}
    live_map = gather_live(bindings, tmp_path, "site/t").live
    [sid] = [s["id"] for s in shown["sessions"].values()]
    assert live_map.sessions == {"controller": Session(sid, RESTART_S)}


def test_a_map_older_than_sessions_gets_one_when_opened(
    tmp_path: Path, provider: ControllerMapProvider, clock: Clock
) -> None:
    available(provider, "cn1")
    provider.close()
    with sqlite3.connect(provider.map_file) as db:  # as a map file from before sessions
        db.execute("DELETE FROM meta WHERE key LIKE 'session%'")
    clock.advance(120)
    reopened = ControllerMapProvider("controller", ControllerMapParams(), tmp_path, now=clock)
    assert session(reopened)["since"] == int(T0) + 120  # unknown start: settle from now
    assert live(reopened)["host/cn1"]["state"] == "available"
    reopened.close()
