"""settings.discovery as the planner reads it (a saved map may hold anything), the name
patterns it matches with, and the host-group index that a group's delete waits on."""

from __future__ import annotations

from typing import Any

import pytest

from compiler.contract.settings import Discovery
from compiler.contract.supply_map import Entry, SupplyMap
from compiler.core.name_patterns import name_matcher, pattern_problem
from compiler.core.problems import UserError
from reconciler.planner import make_plan, rules_groups
from reconciler.planner.settings import read_settings

OWNER = "site/t"


def _settings(discovery: Any) -> Discovery:
    return read_settings({"owner": OWNER, "discovery": discovery}).discovery


def test_the_word_form_reads_as_before() -> None:
    assert _settings("reject") == Discovery(policy="reject")
    assert _settings("admit").policy_for("anything") == "admit"


def test_the_mapping_form_reads_every_key() -> None:
    got = _settings({"policy": "admit", "names": ["burst*", "cn[01-10]"], "otherwise": "reject",
                     "group": "burst", "counters": {"slots": 32}})
    assert got == Discovery("admit", ("burst*", "cn[01-10]"), "reject", "burst", {"slots": 32})
    assert [got.policy_for(h) for h in ("burst7", "cn05", "cn5", "cn11", "x1")] == [
        "admit", "admit", "reject", "reject", "reject"]


def test_names_without_otherwise_report_the_rest() -> None:
    got = _settings({"policy": "admit", "names": ["gpu-??"]})
    assert (got.policy_for("gpu-01"), got.policy_for("gpu-001")) == ("admit", "report")


@pytest.mark.parametrize(
    ("discovery", "code", "subject"),
    [
        ("maybe", "XCE755", "settings.discovery"),
        (7, "XCE755", "settings.discovery"),
        ({"policy": "allow"}, "XCE755", "settings.discovery.policy"),
        ({"names": ["a*"]}, "XCE755", "settings.discovery.policy"),
        ({"policy": "admit", "otherwise": "admit"}, "XCE755", "settings.discovery.otherwise"),
        ({"policy": "admit", "names": "burst*"}, "XCE755", "settings.discovery.names"),
        ({"policy": "admit", "group": 3}, "XCE755", "settings.discovery.group"),
        ({"policy": "admit", "counters": {"slots": -1}}, "XCE755", "settings.discovery.counters"),
        ({"policy": "admit", "counters": {"slots": True}}, "XCE755",
         "settings.discovery.counters"),
        ({"policy": "admit", "names": ["a*"], "group": "g", "colour": "red"}, "XCE755",
         "settings.discovery.colour"),
        ({"policy": "admit", "names": ["cn[01-"]}, "XCE726", "settings.discovery.names[0]"),
        ({"policy": "admit", "names": ["ok", "b*[1-2]"]}, "XCE726",
         "settings.discovery.names[1]"),
    ],
)
def test_a_bad_saved_setting_is_one_clear_problem(discovery: Any, code: str,
                                                  subject: str) -> None:
    with pytest.raises(UserError) as info:
        _settings(discovery)
    (problem,) = info.value.problems
    assert (problem.code, problem.subject) == (code, subject)


def test_the_group_must_be_in_the_desired_map() -> None:
    desired = SupplyMap({}, owner=OWNER, settings={"owner": OWNER, "discovery": {
        "policy": "admit", "group": "burst"}})
    with pytest.raises(UserError) as info:
        make_plan(desired, SupplyMap({}), now=0)
    (problem,) = info.value.problems
    assert (problem.code, problem.subject) == ("XCE725", "settings.discovery.group")
    assert "'burst'" in problem.message


@pytest.mark.parametrize(
    ("pattern", "why"),
    [("burst*", None), ("cn[0001-0100]", None), ("cn07", None), ("g?-*", None),
     ("b*[1-2]", "mixes a glob"), ("a b*", "host-name characters"),
     ("cn[9-1]", "not a hostlist"), ("cn[01-", "not a hostlist")],
)
def test_a_pattern_is_a_hostlist_or_a_glob_never_both(pattern: str, why: str | None) -> None:
    got = pattern_problem(pattern)
    assert (got is None) if why is None else (got is not None and why in got)


def test_hostlists_match_by_slurms_padding_and_globs_by_fnmatch() -> None:
    match = name_matcher(("cn[8-11]", "gpu*", "login1"))
    assert [match(n) for n in ("cn8", "cn08", "cn10", "cn12", "gpu-a", "xgpu", "login1",
                               "login10", "cn[8-9]", "cn8,cn9")] == [
        True, False, True, False, True, False, True, False, False, False]


def _host(name: str, group: str, state: str) -> Entry:
    return Entry(f"host/{name}", "host", state, "config", "ctl", attributes={"group": group},
                 owner=OWNER)


def _group(name: str) -> Entry:
    return Entry(f"host-group/{name}", "host-group", "available", "config", "ctl",
                 attributes={"hosts": ""}, owner=OWNER)


def test_the_hosts_by_group_index_is_built_once_per_plan_and_only_when_needed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []
    original = rules_groups._index

    def counted(live: Any, desired: Any) -> dict[str, list[str]]:
        calls.append(len(live))
        return original(live, desired)

    monkeypatch.setattr(rules_groups, "_index", counted)
    hosts = [_host(f"a{i:03}", "a", "draining") for i in range(100)]
    hosts += [_host(f"b{i:03}", "b", "released") for i in range(100)]
    live_entries = {e.id: e for e in (*hosts, _group("a"), _group("b"), _group("c"))}
    desired = SupplyMap({"host-group/c": _group("c")}, owner=OWNER, settings={"owner": OWNER})
    plan = make_plan(desired, SupplyMap(live_entries), now=0)
    assert calls == [len(live_entries)]  # two groups removed, one pass
    assert [a.id for a in plan.actions] == ["delete:host-group/b"]
    [note] = [n for n in plan.pending if n.entry == "host-group/a"]
    assert note.reason.endswith("its 100 hosts are drained and released: a[000-099] "
                                "(100 draining)")
    calls.clear()
    make_plan(desired, SupplyMap({"host-group/c": _group("c"), **{e.id: e for e in hosts}}),
              now=0)
    assert calls == []  # no group removed: the live map is never scanned for it
