"""The hook where ignore rules and waivers judge findings: with no rules everything
passes; what a rule ignores is counted in the report, never recorded or notified."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime

from compiler.contract.bindings import Bindings
from compiler.contract.supply_map import SupplyMap
from reconciler.drift.detect import Fixer
from reconciler.drift.model import Category, FieldDiff, Finding
from reconciler.drift.report import make_report
from reconciler.drift.screen import Screened, Verdict, screen
from reconciler.pipeline import Desired, Live
from reconciler.planner import make_plan
from reconciler.state import StateStore
from tests.drift.test_detect import DESIRED, LIVE, OWNER, SETTINGS

AT = datetime(2026, 3, 1, tzinfo=UTC)
DRAINED = Finding(Category.NOT_CORRECTED, "host/cn02", "host", "ctl", "drained")
MISSING = Finding(Category.MISSING, "volume-dir/v/bob", "volume-dir", "fs", "not live")
QUOTA = Finding(Category.DIFFERS, "quota/v/user/a", "quota", "fs", "raise")


@dataclass(frozen=True)
class ByKind:
    kind: str
    verdict: Verdict

    def judge(self, finding: Finding, at: datetime) -> Verdict | None:
        return self.verdict if finding.kind == self.kind else None


def test_no_rules_pass_everything_unchanged() -> None:
    assert screen([DRAINED, MISSING], (), AT) == Screened((DRAINED, MISSING))


def test_the_first_matching_rule_decides() -> None:
    rules = (ByKind("host", Verdict(True, "maintenance until Friday")),
             ByKind("host", Verdict(False, "never reached")),
             ByKind("quota", Verdict(False, "waiver expired on 2026-02-20")))
    result = screen([DRAINED, MISSING, QUOTA], rules, AT)
    assert [f.entry for f in result.ignored] == ["host/cn02"]
    assert result.ignored[0].remark == "maintenance until Friday"
    assert [(f.entry, f.remark) for f in result.kept] == [
        ("volume-dir/v/bob", ""), ("quota/v/user/a", "waiver expired on 2026-02-20")]


def test_a_rule_may_ignore_some_fields_of_a_finding_only() -> None:
    two = Finding(Category.DIFFERS, "host/cn01", "host", "ctl", "differs", "available",
                  "available", (FieldDiff("attributes.rack", "r1", "r2"),
                                FieldDiff("attributes.features", ["a"], ["b"])))
    fields = frozenset({"attributes.rack"})
    result = screen([two], (ByKind("host", Verdict(True, "racks move", fields)),), AT)
    ((kept,), (ignored,)) = (result.kept, result.ignored)
    assert ([f.path for f in kept.fields], kept.remark) == (["attributes.features"], "")
    assert ([f.path for f in ignored.fields], ignored.remark) == (["attributes.rack"],
                                                                  "racks move")
    only = replace(two, fields=two.fields[:1])
    assert screen([only], (ByKind("host", Verdict(True, "", fields)),), AT).kept == ()


def test_what_a_rule_ignores_is_counted_but_never_recorded(store: StateStore) -> None:
    desired = SupplyMap({x.id: x for x in DESIRED}, site="t", owner=OWNER, settings=SETTINGS)
    live = SupplyMap({x.id: x for x in LIVE}, owner=OWNER)
    plan = make_plan(desired, live, now=0)
    rules = (ByKind("host", Verdict(True, "maintenance")),)
    report = make_report(Desired(desired, Bindings({}), "sha256:x"), Live(live), plan,
                         Fixer(("s",)), at=AT, store=store, record=True, rules=rules)
    assert [f.entry for f in report.ignored] == ["host/h1"]
    assert report.counts()["ignored"] == 1 and "host/h1" not in {f.entry for f in report.findings}
    recorded = {e.subject for e in store.open_drift("t")}
    assert recorded == {f.subject for f in report.findings} and len(recorded) == 8
    assert store.drift_history("t")[0].counts["ignored"] == 1
    assert all(f.since == AT for f in report.findings)
