"""A provider's session in its inventory (P8): gathered into the live map, checked like every
other field of a reply or a snapshot, and held against orphan removals by the planner.

The providers are real: the cloud simulator run as an ``exec`` process, where a failover is
what ``python3 -m reconciler.testdoubles.sim_provider cloud --failover`` records in its
state folder (a standby taking over), and the embedded controller map, restarted with
``xce-map restart``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from compiler.contract.supply_map import Entry, Session, SupplyMap
from compiler.core.problems import UserError
from reconciler.cmds.map import main as map_main
from reconciler.live import gather_live, load_live_snapshot
from reconciler.planner import make_plan
from reconciler.protocol import ProviderError, inventory_session
from reconciler.providers.base import state_dir
from reconciler.providers.registry import open_provider
from tests.helpers import ok

OWNER = "site/t"
SIM = [sys.executable, "-m", "reconciler.testdoubles.sim_provider", "cloud"]
BINDINGS = {"providers": {"cloud": {"kind": "exec", "command": SIM}}, "proxies": {}}


def _failover(workdir: Path, *at: str) -> dict[str, Any]:
    home = state_dir(workdir, "cloud")
    home.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([*SIM, "--failover", *at], cwd=home, capture_output=True,
                          text=True, check=True)
    session: dict[str, Any] = json.loads(done.stdout)
    return session


def _instance(tmp_path: Path, name: str) -> None:
    t = open_provider("cloud", BINDINGS["providers"]["cloud"], tmp_path)
    ok(t, "create", op_id=f"c-{name}", epoch=1, owner=OWNER,
       params={"entry": {"id": f"instance/{name}", "kind": "instance", "source": "config"}})
    t.close()


def test_a_proxy_failover_holds_the_release_of_an_unclaimed_instance(tmp_path: Path) -> None:
    _instance(tmp_path, "b01")
    before = gather_live(BINDINGS, tmp_path, OWNER).live
    assert before.sessions == {} and "instance/b01" in before.entries
    desired = SupplyMap({}, site="t", owner=OWNER, settings={"owner": OWNER})
    assert [a.id for a in make_plan(desired, before, now=2_000_000).actions] == [
        "release:instance/b01"]

    assert _failover(tmp_path, "--at", "2000000") == {"id": "failover-1", "since": 2000000}
    live = gather_live(BINDINGS, tmp_path, OWNER).live
    assert live.sessions == {"cloud": Session("failover-1", 2_000_000)}
    plan = make_plan(desired, live, now=2_000_060)
    assert plan.actions == ()
    [held] = plan.pending
    assert held.entry == "instance/b01"
    assert "waiting for provider cloud to settle" in held.reason
    assert "9 minutes left of its settle window (10 minutes)" in held.reason
    assert [a.id for a in make_plan(desired, live, now=2_000_600).actions] == [
        "release:instance/b01"]

    assert _failover(tmp_path)["id"] == "failover-2"  # the next standby, now
    snapshot = tmp_path / "live.json"
    snapshot.write_bytes(gather_live(BINDINGS, tmp_path, OWNER).live.dumps())
    assert load_live_snapshot(snapshot).sessions["cloud"].id == "failover-2"


BAD_SESSIONS = [
    ("not an object", "must be an object with 'id' and 'since'"),
    ({"since": 5}, "'id' must be a non-empty string"),
    ({"id": "", "since": 5}, "'id' must be a non-empty string"),
    ({"id": "boot\n2", "since": 5}, "contains a control character"),
    ({"id": "b" * 300, "since": 5}, "300 bytes long"),
    ({"id": "boot-2"}, "'since' must be seconds since the epoch"),
    ({"id": "boot-2", "since": True}, "'since' must be seconds since the epoch"),
    ({"id": "boot-2", "since": "10:00"}, "'since' must be seconds since the epoch"),
    ({"id": "boot-2", "since": -1}, "'since' must be seconds since the epoch"),
]


@pytest.mark.parametrize(("session", "says"), BAD_SESSIONS)
def test_a_bad_session_is_a_protocol_error(session: object, says: str) -> None:
    with pytest.raises(ProviderError) as err:
        inventory_session({"generation": 1, "complete": True, "entries": [], "session": session})
    assert err.value.code.value == "INTERNAL" and says in err.value.message


def test_no_session_is_none() -> None:
    assert inventory_session({"generation": 1, "complete": True, "entries": []}) is None


def test_a_provider_reporting_a_bad_session_is_unknown(tmp_path: Path) -> None:
    """Not ignored: a provider that cannot say when it restarted cannot say it settled."""
    _instance(tmp_path, "b01")
    _failover(tmp_path, "--at", "-60")
    result = gather_live(BINDINGS, tmp_path, OWNER)
    assert result.live.entries == {} and result.live.sessions == {}
    [problem] = result.problems
    assert (problem.code, problem.subject) == ("XCE703", "cloud")
    assert "answered garbage (inventory session: 'since' must be seconds" in problem.message
    assert "cloud" in result.live.unknown


def _snapshot(tmp_path: Path, sessions: object) -> Path:
    entry = Entry("instance/b01", "instance", "available", "config", "cloud", owner=OWNER)
    doc = SupplyMap({entry.id: entry}, site="t", owner=OWNER).to_json()
    path = tmp_path / "live.json"
    path.write_bytes(orjson.dumps({**doc, "sessions": sessions}))
    return path


@pytest.mark.parametrize(("session", "_"), BAD_SESSIONS)
def test_a_snapshot_with_a_bad_session_names_it(tmp_path: Path, session: object, _: str) -> None:
    with pytest.raises(UserError) as err:
        load_live_snapshot(_snapshot(tmp_path, {"cloud": session}))
    [problem] = err.value.problems
    assert problem.code == "XCE709" and problem.where is not None
    assert problem.where.ypath == ("sessions", "cloud")
    assert problem.message.startswith("sessions.cloud: must be a session")


def test_a_snapshot_whose_sessions_are_not_an_object_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError) as err:
        load_live_snapshot(_snapshot(tmp_path, ["cloud"]))
    assert [(p.code, p.message) for p in err.value.problems] == [
        ("XCE709", "'sessions' must be an object")]


CONTROLLER = {"providers": {"controller": {"kind": "controller-map", "params": {}}},
              "proxies": {}}
NAMES = [f"cn{i:02d}" for i in range(1, 6)]


def _host(name: str) -> dict[str, Any]:
    return {"id": f"host/{name}", "kind": "host", "state": "available", "source": "config",
            "provider": "controller", "attributes": {"group": "cpu"}, "owner": OWNER}


def _xmap(workdir: Path, *args: str, at: float) -> None:
    when = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert map_main(["--workdir", str(workdir), *args, "--at", when]) == 0


def test_after_a_controller_restart_a_reject_waits_for_the_workers(tmp_path: Path) -> None:
    """The controller map's own session and ``spec.seen``: rejoin mode names who is missing."""
    t = open_provider("controller", CONTROLLER["providers"]["controller"], tmp_path)
    for name in NAMES:
        ok(t, "create", op_id=f"h-{name}", epoch=1, owner=OWNER, params={"entry": _host(name)})
    t.close()
    start = float(int(time.time()))
    _xmap(tmp_path, "report", "join", "cn[01-05]", at=start + 1)
    _xmap(tmp_path, "report", "available", "cn[01-05]", at=start + 2)
    _xmap(tmp_path, "restart", at=start + 100)
    _xmap(tmp_path, "report", "join", "cn[01-03],x01", at=start + 110)  # x01: unknown
    desired = SupplyMap({f"host/{n}": Entry.from_json(_host(n)) for n in NAMES}, site="t",
                        owner=OWNER, settings={"owner": OWNER, "discovery": "reject",
                                               "settle": {"wait": "rejoin", "window": 1800}})

    live = gather_live(CONTROLLER, tmp_path, OWNER).live
    assert live.sessions["controller"].since == start + 100
    plan = make_plan(desired, live, now=start + 120)
    assert plan.actions == ()
    [held] = plan.pending
    assert held.entry == "host/x01" and held.reason.startswith("would reject: ")
    assert "2 of 6 workers have not reported since: cn[04-05] (at most 29 minutes" in held.reason

    _xmap(tmp_path, "report", "join", "cn[04-05]", at=start + 130)
    live = gather_live(CONTROLLER, tmp_path, OWNER).live
    assert [a.id for a in make_plan(desired, live, now=start + 140).actions] == [
        "reject:host/x01"]
