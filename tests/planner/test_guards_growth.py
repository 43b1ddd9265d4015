"""XCE754 and XCE758 (issue 21): creates the config's growth explains are not an inventory
that shrank; creates beyond it still are, measured against what was desired before."""

from __future__ import annotations

from collections.abc import Collection

from compiler.core.problems import Problem, Severity
from reconciler.plan.model import Action, Plan, Verb
from reconciler.planner.guards import Growth, check_guards, growth_still_accepted
from reconciler.planner.settings import read_settings

SETTINGS = read_settings({"owner": "site/t", "safety": {"min_entries": 5}}, "site/t")


def _create(entry: str, provider: str = "ctl") -> Action:
    return Action(id=f"create:{entry}", verb=Verb.CREATE, entry=entry, kind="host",
                  provider=provider, reason="not in the live map")


def _hosts(first: int, last: int) -> list[str]:
    return [f"host/cn{i:03d}" for i in range(first, last + 1)]


def _guards(created: list[str], wanted: int, live: int, growth: Growth | None,
            accept: Collection[str] = (), force: bool = False) -> list[tuple[str, Severity]]:
    found: list[Problem] = check_guards(
        [_create(e) for e in created], SETTINGS, desired_per_provider={"ctl": wanted},
        live_per_provider={"ctl": live}, live_per_kind={"host": live}, unknown={},
        force=force, growth=growth, accept_growth=accept)
    return [(p.code, p.severity) for p in found]


def test_growth_explains_the_creates() -> None:
    """100 desired before, 300 added: 300 creates of 400 (75%) are the config's growth."""
    growth = Growth("origin/main", frozenset(_hosts(101, 400)))
    assert _guards(_hosts(101, 400), 400, 100, None) == [("XCE754", Severity.ERROR)]
    assert _guards(_hosts(101, 400), 400, 100, growth) == [("XCE758", Severity.ERROR)]
    assert _guards(_hosts(101, 400), 400, 100, growth, force=True) == [
        ("XCE758", Severity.WARNING)]
    assert _guards(_hosts(101, 400), 400, 100, growth, accept=["ctl"]) == [
        ("XCE758", Severity.WARNING)]


def test_a_loss_beside_growth_is_still_a_loss() -> None:
    """300 added, and 60 of the 100 desired before vanished: 60% of what was there is lost,
    more than 50% (of all 400 desired it would be only 15%): XCE754, and no acceptance."""
    growth = Growth("origin/main", frozenset(_hosts(101, 400)))
    created = [*_hosts(1, 60), *_hosts(101, 400)]
    assert _guards(created, 400, 40, growth) == [("XCE754", Severity.ERROR)]
    assert _guards(created, 400, 40, growth, accept=["ctl"]) == [
        ("XCE754", Severity.ERROR), ("XCE759", Severity.ERROR)]
    # 40 lost (40%) beside the growth: within the fraction, the growth explains the rest
    assert _guards([*_hosts(1, 40), *_hosts(101, 400)], 400, 60, growth) == [
        ("XCE758", Severity.ERROR)]


def test_the_apply_accepts_only_the_creates_the_plan_accepted() -> None:
    saved = Plan(actions=tuple(_create(e) for e in _hosts(101, 400)), accepted_growth=("ctl",))
    assert growth_still_accepted(saved, saved) == []
    again = Plan(actions=(_create("host/cn007"), *saved.actions, _create("x/y", "other")))
    [problem] = growth_still_accepted(saved, again)
    assert (problem.code, problem.subject) == ("XCE759", "ctl")
    assert "for the 300 entries it creates there, but planned again now 1 more" in problem.message
    assert growth_still_accepted(Plan(actions=saved.actions), again) == []  # none accepted
