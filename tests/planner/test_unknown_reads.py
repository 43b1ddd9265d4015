"""Issue 8 §1: an unknown provider never causes a removal elsewhere.

Each case is a small world in which a rule plans a removal (the control: with every
provider known, the removal *is* planned). Then each provider the case involves is made
unknown in turn — its live entries gone, its name in ``live.unknown`` — and no removal
verb may be planned at all; the entry the removal was for is listed under ``unknown``.
The same holds when an entry the decision reads is reported by two providers (contested).
Every rule of ``RULES`` and the generic rule (with its counter-on-a-host logic) has a
case, and the cases name every provider the rules actually read (``Builder.read`` spied).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from compiler.contract.supply_map import Entry, SupplyMap
from reconciler.plan.model import Plan
from reconciler.planner import make_plan
from reconciler.planner.builder import Builder
from reconciler.planner.make import RULES

OWNER = "site/t"
NOW = 100_000.0


def e(entry_id: str, provider: str, state: str = "available", **kw: Any) -> Entry:
    kw.setdefault("source", "config")
    kw.setdefault("owner", OWNER)
    return Entry(entry_id, entry_id.partition("/")[0], state, provider=provider, **kw)


@dataclass(frozen=True)
class Case:
    name: str
    rule: str  # a kind of RULES, or "generic"
    removal: str  # the action id planned while every provider is known
    desired: tuple[Entry, ...] = ()
    live: tuple[Entry, ...] = ()
    also: tuple[str, ...] = ()  # bound providers that hold nothing here (but could)
    settings: Mapping[str, Any] = field(default_factory=dict)
    destroy: bool = False
    decider: str = ""  # the entry whose rule decides the removal (default: its subject)

    @property
    def providers(self) -> list[str]:
        named = {x.provider for x in (*self.desired, *self.live) if x.provider}
        return sorted(named | set(self.also))

    @property
    def subject(self) -> str:
        return self.removal.partition(":")[2]

    def visible(self, silent: str) -> bool:
        """Whether the planner still sees the deciding entry: in config, or reported by a
        provider that answered."""
        decider = self.decider or self.subject
        return any(x.id == decider and (x in self.desired or x.provider != silent)
                   for x in (*self.desired, *self.live))


B1 = e("host/b1", "ctl", attributes={"group": "burst"})
JOB_VOLUME = e("volume/v", "fs", spec={"retention": 3600, "orphans": "remove"})


def _job_dir(job: int) -> Entry:
    """A job directory idle since the epoch, as the directory provider reports it."""
    return e(f"job-dir/v/alice/{job}", "fs", source="provisioner", owner=None,
             location="volume/v", spec={"user": "alice", "job": str(job), "last_write": 0})


CASES = [
    Case("instance whose host left config", "instance", "release:instance/b2",
         desired=(B1,), live=(B1, e("instance/b2", "cloud", source="provisioned"))),
    Case("instance whose host was released", "instance", "release:instance/b2",
         desired=(B1,),
         live=(B1, e("host/b2", "ctl", "released"), e("instance/b2", "cloud",
                                                      source="provisioned"))),
    Case("instance with no host in config at all", "instance", "release:instance/b2",
         live=(e("instance/b2", "cloud", source="provisioned"),), also=("ctl",)),
    Case("host that never joined: its instance released", "host", "release:instance/b1",
         desired=(e("host/b1", "ctl", source="provisioned", spec={"join_deadline": 60}),
                  e("instance/b1", "cloud", spec={"template": "t"})),
         live=(e("host/b1", "ctl", "expected", source="provisioned", spec={"since": 0}),
               e("instance/b1", "cloud", spec={"template": "t", "since": 0})),
         decider="host/b1"),
    Case("host left config: drained", "host", "drain:host/cn2",
         desired=(e("host/cn1", "ctl"),), live=(e("host/cn1", "ctl"), e("host/cn2", "ctl"))),
    Case("drained host left config: released", "host", "release:host/cn2",
         live=(e("host/cn2", "ctl", "drained"),)),
    Case("discovered host under discovery: reject", "host", "reject:host/x9",
         live=(e("host/x9", "ctl", source="discovered", owner=None),),
         settings={"discovery": "reject"}),
    Case("dataset copy left config: evicted", "dataset-copy",
         "evict:dataset-copy/d@1@group/g",
         live=(e("dataset-copy/d@1@group/g", "cache", location="group/g",
                 spec={"dataset": "d@1", "digest": "sha256:0"}),)),
    Case("counter on a host that left (member of a host)", "generic",
         "delete:counter/slots@host/cn2",
         live=(e("host/cn2", "hosts", "released"),
               e("counter/slots@host/cn2", "ctl", location="host/cn2", amount=8))),
    Case("counter on a host still in config", "generic", "delete:counter/gpu@host/cn1",
         desired=(e("host/cn1", "hosts"),),
         live=(e("host/cn1", "hosts"),
               e("counter/gpu@host/cn1", "ctl", location="host/cn1", amount=2))),
    Case("host group left config, its hosts released", "host-group", "delete:host-group/old",
         live=(e("host-group/old", "ctl", attributes={"hosts": ""}),
               e("host/o1", "hosts", "released", attributes={"group": "old"}))),
    Case("counter the discovery policy no longer names", "counter",
         "delete:counter/gpu@host/x1",
         live=(e("host/x1", "hosts", source="discovered"),
               e("counter/gpu@host/x1", "ctl", location="host/x1", amount=2)),
         settings={"discovery": {"policy": "admit"}}),
    Case("user directory left config", "generic", "delete:volume-dir/v/bob",
         live=(e("volume-dir/v/bob", "fs", spec={"mode": "0700"}),),
         settings={"management": {"volume-dir": "correct-destructive"}}, destroy=True),
    Case("job directory past its retention", "job-dir", "evict:job-dir/v/alice/1",
         desired=(JOB_VOLUME,),
         live=(JOB_VOLUME, _job_dir(1), e("job/1", "ctl", "finished", source="reporter",
                                          owner=None, spec={"user": "alice", "ended": 0})),
         destroy=True),
    Case("orphan job directory under orphans: remove", "job-dir", "evict:job-dir/v/alice/2",
         desired=(JOB_VOLUME,),
         live=(JOB_VOLUME, _job_dir(2), e("job/3", "ctl", "running", source="reporter",
                                          owner=None, spec={"user": "alice"})),
         destroy=True),
]


def _maps(case: Case, unknown: Mapping[str, str] = {},
          contested: Mapping[str, str] = {}) -> tuple[SupplyMap, SupplyMap]:
    settings = {"owner": OWNER, "safety": {"min_entries": 1000}, **case.settings}
    desired = SupplyMap({x.id: x for x in case.desired}, owner=OWNER, settings=settings)
    live = SupplyMap({x.id: x for x in case.live
                      if x.provider not in unknown and x.id not in contested},
                     owner=OWNER, unknown=dict(unknown), unknown_entries=dict(contested))
    return desired, live


def _plan(case: Case, **kw: Mapping[str, str]) -> Plan:
    desired, live = _maps(case, **kw)
    return make_plan(desired, live, now=NOW, destroy=case.destroy)


def _removals(plan: Plan) -> list[str]:
    return [a.id for a in plan.actions if a.verb.removes]


def _cases() -> Iterator[Any]:
    return (pytest.param(c, id=c.name) for c in CASES)


def _per_provider() -> Iterator[Any]:
    for c in CASES:
        for p in c.providers:
            yield pytest.param(c, p, id=f"{c.name}: {p} unknown")


def test_every_rule_has_a_case() -> None:
    assert {c.rule for c in CASES} == {*RULES, "generic"}


@pytest.mark.parametrize("case", list(_cases()))
def test_with_every_provider_known_the_removal_is_planned(case: Case) -> None:
    assert _removals(_plan(case)) == [case.removal]  # and no other: the cases are tight


@pytest.mark.parametrize(("case", "provider"), list(_per_provider()))
def test_an_unknown_provider_it_reads_stops_every_removal(case: Case, provider: str) -> None:
    plan = _plan(case, unknown={provider: "test: the provider is down"})
    assert _removals(plan) == []
    for name in ("orphans", "pending", "drift_reported"):  # no report rests on it either
        assert case.subject not in {n.entry for n in getattr(plan, name)}, name
    notes = {n.entry: n.reason for n in plan.unknown}
    decider = case.decider or case.subject
    if not case.visible(provider):
        assert decider not in notes  # only its silent provider could have told of it
        return
    assert decider in notes, [n.entry for n in plan.unknown]
    assert provider in notes[decider] and "the provider is down" in notes[decider]


def _reads(case: Case, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every id the rules read for this case, with every provider known."""
    seen: list[str] = []
    original = Builder.read

    def spy(self: Builder, entry_id: str) -> Entry | None:
        seen.append(entry_id)
        return original(self, entry_id)

    with monkeypatch.context() as m:
        m.setattr(Builder, "read", spy)
        _plan(case)
    return seen


@pytest.mark.parametrize("case", list(_cases()))
def test_the_cases_name_every_provider_the_rules_read(
    case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read the case did not foresee would escape the test above: check none does."""
    every = (*case.desired, *case.live)
    for read in _reads(case, monkeypatch):
        holders = {x.provider for x in every if x.id == read}
        holders = holders or {x.provider for x in every if x.kind == read.partition("/")[0]}
        assert holders <= set(case.providers), read
        assert holders or case.also, f"{read}: no provider could hold it; name one in also"


@pytest.mark.parametrize("case", list(_cases()))
def test_a_contested_entry_it_reads_stops_the_removal(
    case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two providers report the same id: neither report is trusted, so neither is the
    decision that reads it."""
    present = {x.id for x in (*case.desired, *case.live)}
    for read in sorted({case.subject, *_reads(case, monkeypatch)} & present):
        why = f"reported by providers 'a' and 'b', so neither report is trusted ({read})"
        plan = _plan(case, contested={read: why})
        assert case.removal not in _removals(plan), read
        notes = {n.entry: n.reason for n in plan.unknown}
        assert why in notes[case.subject], read


def test_the_reason_names_the_entry_read_and_its_provider() -> None:
    case = CASES[0]
    plan = _plan(case, unknown={"ctl": "FAILED_PRECONDITION: file is not a database"})
    [note] = [n for n in plan.unknown if n.entry == "instance/b2"]
    assert note.provider == "cloud"  # the entry's own provider answered
    assert note.reason.startswith("depends on host/b2 (which provider ctl may hold), whose "
                                  "inventory is unknown: FAILED_PRECONDITION")
    assert note.reason.endswith("would release: not in config: no entry claims this instance")


def test_a_read_of_a_present_entry_names_where_it_is_held() -> None:
    """The host is in the desired map at the silent provider: it is held there for sure."""
    instance = e("instance/b1", "cloud", spec={"template": "t"})
    desired = (e("host/b1", "ctl", source="provisioned"), instance)
    case = Case("update of an instance whose host is unknown", "instance", "",
                desired=desired, live=(desired[0], replace(instance, spec={"template": "old"})))
    known = _plan(case)
    assert [a.id for a in known.actions] == ["update:instance/b1"]
    plan = _plan(case, unknown={"ctl": "down"})
    assert plan.actions == ()  # the update read the host (is it overdue?), which is unknown
    notes = {n.entry: n.reason for n in plan.unknown}
    assert notes["instance/b1"].startswith("depends on host/b1 (at provider ctl)")


def test_known_providers_plan_as_before_when_another_kind_is_unknown() -> None:
    """Only decisions that read the silent provider's entries wait: a copy is still evicted
    while the cloud is unknown, since nothing about it lives there."""
    copy_case = CASES[7]
    cloud = Case(copy_case.name, copy_case.rule, copy_case.removal, live=copy_case.live,
                 also=("cloud",))
    assert _removals(_plan(cloud, unknown={"cloud": "down"})) == [copy_case.removal]


def test_rules_read_live_entries_only_through_builder_read() -> None:
    """``b.live.get`` would bypass the check: an absent entry and an unknown one look
    alike there (the corrupt controller map's hosts were read that way)."""
    import ast
    from pathlib import Path

    import reconciler.planner as planner

    for path in sorted(Path(planner.__file__).parent.glob("rules_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "live":
                assert not isinstance(node.value, ast.Name) or node.value.id != "b", (
                    f"{path.name}:{node.lineno} reads b.live; use b.read(entry_id)")
