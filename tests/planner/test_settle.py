"""The settle window (P8): sessions in the live map, ``site.settle`` in config and in a saved
map, and the hold on orphan removals beyond what the scenario folders show."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest

from compiler.compile import compile_site
from compiler.contract.supply_map import Entry, Session, SupplyMap, decode_map
from compiler.core.problems import Problems, UserError
from reconciler.planner import make_plan
from reconciler.planner.settings import read_settings
from tests.planner.scenario_io import load_maps

OWNER = "site/t"


def _settings(desired: SupplyMap, **settle: object) -> SupplyMap:
    return replace(desired, settings={**desired.settings, "settle": settle})


def test_sessions_round_trip_and_stay_out_of_the_digest() -> None:
    entry = Entry("host/cn01", "host", "available", "config", "ctl", owner=OWNER)
    bare = SupplyMap({entry.id: entry}, site="t", owner=OWNER)
    live = replace(bare, sessions={"ctl": Session("boot-2", 1764540000),
                                   "cloud": Session("failover-1", 1764540000.25)})
    doc = live.to_json()
    assert doc["sessions"] == {"cloud": {"id": "failover-1", "since": 1764540000.25},
                               "ctl": {"id": "boot-2", "since": 1764540000}}
    assert SupplyMap.from_json(doc) == live
    decoded = decode_map(live.dumps())  # the fast path of xce-plan --live FILE
    assert decoded is not None and decoded.supply == live
    assert live.content_digest() == bare.content_digest() == doc["digest"]
    assert "sessions" not in bare.to_json()


def _compiled_settings(tmp_path: Path, settle: str) -> dict[str, object]:
    (tmp_path / "site.yaml").write_text(f"version: 1\nsite:\n  name: t\n{settle}")
    problems = Problems()
    compiled, _ = compile_site(tmp_path, problems)
    assert compiled is not None, problems
    return dict(compiled.supply_map.settings)


def test_site_settle_is_emitted_only_when_not_the_default(tmp_path: Path) -> None:
    plain = _compiled_settings(tmp_path, "")
    assert "settle" not in plain
    spelled_out = _compiled_settings(tmp_path, "  settle: {wait: window, window: 10m}\n")
    assert spelled_out == plain  # so existing maps keep their digest
    rejoin = _compiled_settings(tmp_path, "  settle: {wait: rejoin, window: 15m}\n")
    assert rejoin["settle"] == {"wait": "rejoin", "window": 900}
    settings = read_settings(rejoin).settle
    assert (settings.wait, settings.window) == ("rejoin", 900)
    default = read_settings(plain).settle
    assert (default.wait, default.window) == ("window", 600)


@pytest.mark.parametrize(("settle", "subject", "says"), [
    ({"wait": "soon"}, "settings.settle.wait", "'soon' is not one of window, rejoin"),
    ({"window": -1}, "settings.settle.window", "non-negative number"),
    ({"window": "10m"}, "settings.settle.window", "non-negative number"),
    ({"windw": 60}, "settings.settle.windw", "no key 'windw'"),
    ("10m", "settings.settle", "must map 'wait' and 'window'"),
])
def test_a_bad_settle_in_a_saved_map_is_a_setting_problem(settle: object, subject: str,
                                                         says: str) -> None:
    with pytest.raises(UserError) as err:
        read_settings({"owner": OWNER, "settle": settle})
    [problem] = err.value.problems
    assert (problem.code, problem.subject) == ("XCE755", subject)
    assert says in problem.message


def test_the_window_bounds_the_wait_for_workers() -> None:
    """Two workers never report again: once the window is over, the removals go ahead."""
    desired, live, _ = load_maps("settle_rejoin_waiting")
    since = live.sessions["ctl"].since
    still = make_plan(desired, live, now=since + 1799)
    assert [a.id for a in still.actions] == []
    over = make_plan(desired, live, now=since + 1800)
    assert [a.id for a in over.actions] == ["reject:host/x01", "release:instance/burst01"]
    assert [n.entry for n in over.pending] == []


def test_a_window_of_zero_never_waits() -> None:
    desired, live, _ = load_maps("settle_window_restart")
    plan = make_plan(_settings(desired, window=0), live, now=live.sessions["ctl"].since)
    assert [a.id for a in plan.actions] == ["release:instance/burst01"]


def test_a_provider_without_hosts_waits_the_window_even_under_rejoin() -> None:
    """A cloud account has no workers whose return would show it settled."""
    desired, live, _ = load_maps("settle_failover_cloud")
    plan = make_plan(_settings(desired, wait="rejoin", window=600), live, now=100000)
    [note] = plan.pending
    assert note.entry == "instance/b03" and "9 minutes left of its settle window" in note.reason


def test_a_session_of_another_provider_holds_nothing() -> None:
    desired, live, _ = load_maps("settle_window_restart")
    moved = replace(live, sessions={"elsewhere": live.sessions["ctl"]})
    plan = make_plan(desired, moved, now=100000)
    assert [a.id for a in plan.actions] == ["release:instance/burst01"]


def _big_site(hosts: int, orphans: int) -> tuple[SupplyMap, SupplyMap]:
    """``hosts`` workers at ctl, every third silent since the restart (no ``seen``: a map
    written before hosts carried it), and ``orphans`` unclaimed instances at cloud."""
    desired: dict[str, Entry] = {}
    live: dict[str, Entry] = {}
    for i in range(hosts):
        spec = {} if i % 3 == 0 else {"seen": 99990}
        d = Entry(f"host/cn{i:06d}", "host", "available", "config", "ctl", owner=OWNER)
        desired[d.id] = d
        live[d.id] = replace(d, spec=spec)
    for i in range(orphans):
        e = Entry(f"instance/burst{i:05d}", "instance", "available", "config", "cloud",
                  owner=OWNER)
        live[e.id] = e
    settings = {"owner": OWNER, "settle": {"wait": "rejoin", "window": 600}}
    return (SupplyMap(desired, site="t", owner=OWNER, settings=settings),
            SupplyMap(live, site="t", owner=OWNER,
                      sessions={"ctl": Session("boot-9", 99900), "cloud": Session("x", 0)}))


def test_rejoin_scans_the_live_hosts_once_per_plan() -> None:
    """2,000 orphan releases that rest on a controller with 30,000 hosts: a scan per
    release would take minutes; once per plan, the plan takes about as long as without."""
    desired, live = _big_site(30_000, 2_000)
    start = time.perf_counter()
    plan = make_plan(desired, live, now=100000)
    elapsed = time.perf_counter() - start
    assert len(plan.pending) == 2_000 and not plan.actions
    reason = plan.pending[0].reason
    assert reason.endswith("10000 of 30000 workers have not reported since: cn[000000,000003,"
                           "000006,000009,000012,000015,000018,000021] … (10000 in all) (at "
                           "most 8 minutes more; settle window 10 minutes)")
    assert len(reason) < 600  # a few names, not ten thousand
    assert elapsed < 3, elapsed
