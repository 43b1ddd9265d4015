"""Renderings of a plan: what a reviewer reads (snapshots), secrets, size limit, colour."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson
import pytest
from syrupy.assertion import SnapshotAssertion

from compiler.cli.formats import Formats
from compiler.cli.problem_render import FORMATS as PROBLEM_FORMATS
from compiler.core.problems import Problem, UserError
from compiler.core.textstyle import Style
from compiler.policy.review_render import FORMATS as REVIEW_FORMATS
from reconciler.plan.model import Action, FieldChange, Plan, Verb, summarize
from reconciler.plan.redact import redacted
from reconciler.render import FORMATS as PLAN_FORMATS
from reconciler.render import render as render_plan
from reconciler.render import render_json, render_markdown, render_text
from reconciler.render.apply import FORMATS as APPLY_FORMATS
from tests.planner.scenario_io import plan_scenario

SNAPSHOT_SCENARIOS = ("volumes_quotas", "hosts_removed", "guard_force")


@pytest.mark.parametrize("name", SNAPSHOT_SCENARIOS)
def test_text_snapshot(name: str, snapshot: SnapshotAssertion) -> None:
    plan, _ = plan_scenario(name)
    assert render_text(plan) == snapshot


@pytest.mark.parametrize("name", SNAPSHOT_SCENARIOS)
def test_markdown_snapshot(name: str, snapshot: SnapshotAssertion) -> None:
    plan, _ = plan_scenario(name)
    assert render_markdown(plan) == snapshot


def test_text_summary_line_counts_add_change_destroy() -> None:
    plan, _ = plan_scenario("hosts_removed")
    assert render_text(plan).rstrip().endswith("Plan: 0 to add, 1 to change, 4 to destroy.")


def test_empty_plan_says_no_changes() -> None:
    plan, _ = plan_scenario("no_changes")
    assert "No changes." in render_text(plan)
    assert "Plan:" not in render_text(plan)
    assert "No changes." in render_markdown(plan)


def test_colour_only_when_asked() -> None:
    plan, _ = plan_scenario("hosts_removed")
    assert "\x1b[" not in render_text(plan, Style(color=False))
    coloured = render_text(plan, Style(color=True))
    assert "\x1b[32m+\x1b[0m" not in coloured  # no creates in this plan
    assert "\x1b[31m-\x1b[0m release" in coloured
    assert "\x1b[33m~\x1b[0m drain" in coloured


def test_json_has_the_brief_contract() -> None:
    plan, _ = plan_scenario("datasets")
    doc = orjson.loads(render_json(plan))
    for action in doc["actions"]:
        assert {"action", "entry", "provider", "reason", "depends_on"} <= action.keys()
    assert doc["summary"]["stage"] == 2
    assert doc["summary"]["evict"] == 1
    assert doc["summary"]["create"] == 1
    assert doc["summary"]["pending"] == 2
    assert [n["entry"] for n in doc["pending"]] == [
        "dataset-copy/old@1@group/b", "dataset-copy/old@1@group/d"]
    assert all(n["reason"] for n in doc["pending"])
    assert doc["blocked"] is False


def _secret_plan() -> Plan:
    spec = {"password": "hunter2-literal", "api_key": "env:FS_KEY",
            "auth": {"token": "tok-literal"}, "path": "/v"}
    before: dict[str, Any] = {"id": "volume/v", "kind": "volume", "state": "available",
                              "source": "config", "provider": "fs", "spec": spec}
    after = {**before, "spec": {**before["spec"], "password": "new-literal"}}
    action = Action(
        id="update:volume/v", verb=Verb.UPDATE, entry="volume/v", kind="volume", provider="fs",
        reason="differs in spec.password", before=before, after=after,
        changes=(FieldChange("spec.password", "hunter2-literal", "new-literal"),
                 FieldChange("spec.auth", {"token": "tok-literal"}, {"token": "file:/run/tok"})),
    )
    return Plan(actions=(action,), summary=summarize([action], {}))


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_secrets_are_never_rendered(fmt: str) -> None:
    out = render_plan(redacted(_secret_plan()), fmt)
    for literal in ("hunter2-literal", "new-literal", "tok-literal"):
        assert literal not in out
    assert "(sensitive)" in out
    assert "file:/run/tok" in out  # a reference is safe to show, and useful


def test_json_keeps_references_and_paths() -> None:
    doc = orjson.loads(render_json(redacted(_secret_plan())))
    action = doc["actions"][0]
    assert action["before"]["spec"]["api_key"] == "env:FS_KEY"
    assert action["before"]["spec"]["path"] == "/v"
    assert action["after"]["spec"]["password"] == "(sensitive)"


def test_redacted_masks_the_plan_once_for_every_output() -> None:
    plan = _secret_plan()
    shown = redacted(plan)
    [action] = shown.actions
    assert action.before is not None and action.after is not None
    assert action.before["spec"]["password"] == "(sensitive)"
    assert action.before["spec"]["auth"] == {"token": "(sensitive)"}
    assert [(c.before, c.after) for c in action.changes] == [
        ("(sensitive)", "(sensitive)"), ({"token": "(sensitive)"}, {"token": "file:/run/tok"})]
    assert redacted(shown) == shown  # masking what is masked changes nothing
    original = plan.actions[0].before
    assert original is not None and original["spec"]["password"] == "hunter2-literal"
    # Everything but the values is the plan as made: ids, verbs, order, fingerprints.
    assert [(a.id, a.verb, a.reason) for a in shown.actions] == [
        (a.id, a.verb, a.reason) for a in plan.actions]
    assert replace(shown, actions=plan.actions) == plan


def _big_plan(n: int) -> Plan:
    """Quotas, one line each (counters at hosts would fold into one line by their amounts)."""
    actions = tuple(
        Action(id=f"update:quota/shared/user/u{i:06d}", verb=Verb.UPDATE,
               entry=f"quota/shared/user/u{i:06d}", kind="quota", provider="controller-map",
               reason="amount 64 → 128", changes=(FieldChange("amount", 64, 128),))
        for i in range(n)
    )
    return Plan(actions=actions, summary=summarize(actions, {}))


def test_markdown_of_100k_actions_stays_under_60k_characters() -> None:
    out = render_markdown(_big_plan(100_000))
    assert len(out) < 60_000
    assert "quota/shared/user/u000000" in out
    assert "quota/shared/user/u099999  " not in out
    assert "Truncated" in out and "`xce-plan --format json` shows all of it" in out
    assert "artifact" not in out and "plan file" not in out  # none was named: none is made up
    named = render_markdown(_big_plan(100_000), artifact="plan", plan_file="p.json")
    assert "in the CI artifact `plan` (the saved plan file `p.json`)" in named
    assert "| update | 100000 |" in out
    assert out.count("<details>") == out.count("</details>")
    assert out.count("```") % 2 == 0


def test_small_markdown_is_not_truncated() -> None:
    out = render_markdown(_big_plan(10))
    assert "Truncated" not in out
    assert "quota/shared/user/u000009" in out


def test_unknown_format_is_refused() -> None:
    with pytest.raises(UserError) as err:
        render_plan(_big_plan(1), "yaml")
    [problem] = err.value.problems
    assert (problem.code, problem.message) == ("XCE007", "unknown plan format 'yaml'")
    assert problem.hint == "use one of: text, json, markdown, github"


def test_markdown_caps_a_flood_of_guard_problems() -> None:
    problems = tuple(
        Problem("XCE752", f"the plan would delete protected entry volume-dir/v/u{i:05d}",
                "protected entries are never removed: take it off site.protected first",
                subject=f"volume-dir/v/u{i:05d}")
        for i in range(5000)
    )
    plan = replace(_big_plan(5000), problems=problems)
    out = render_markdown(plan)
    assert len(out) < 60_000
    assert "4950 more problems" in out
    assert "refused by a guard" in out


def test_shorten_keeps_start_and_end_and_says_how_much_is_left_out() -> None:
    from compiler.core.text_limits import shorten

    assert shorten("a" * 200) == "a" * 200
    cut = shorten("<" + "x" * 10_000 + ">")
    assert cut.startswith("<xxx") and cut.endswith("xx>") and len(cut) < 250
    assert "[9827 more characters]" in cut


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_long_live_values_are_shortened_when_displayed(fmt: str) -> None:
    """Issue 8 §8: an inventory with huge values printed 52 MB of plan. Ids within the
    limits (2,048 bytes), a 1 MiB attribute and a long provider message stay readable."""
    from compiler.contract.supply_map import Entry, SupplyMap
    from reconciler.planner import make_plan

    owner = "site/t"
    long_id = "volume/" + "/".join(["v" * 200] * 9)
    desired = Entry("quota/q", "quota", "available", "config", "fs", amount=1,
                    attributes={"note": "y" * 2**20}, owner=owner)
    gone = Entry(long_id, "volume", "available", "config", "fs", owner=owner)
    plan = make_plan(
        SupplyMap({desired.id: desired, "license/l@site": Entry(
            "license/l@site", "license", "available", "config", "down")}, owner=owner,
            settings={"owner": owner, "management": {"volume": "correct-destructive"}}),
        SupplyMap({"quota/q": replace(desired, attributes={"note": "z" * 2**20}),
                   long_id: gone}, owner=owner, unknown={"down": "E" * 50_000}),
        now=0, destroy=True)
    assert {a.id for a in plan.actions} == {"update:quota/q", f"delete:{long_id}"}
    out = render_plan(plan, fmt)
    assert len(out) < 8_000, len(out)
    assert "more characters]" in out
    doc = orjson.loads(render_json(plan))  # the JSON (and the plan file) keep every byte
    [update] = [a for a in doc["actions"] if a["action"] == "update"]
    assert update["changes"][0]["after"] == "y" * 2**20


def test_each_verb_is_counted_and_marked_by_its_group() -> None:
    """Drain is a change (the host stays until released) though it removes; admit adds."""
    actions = tuple(Action(f"{v}:host/h{i}", v, f"host/h{i}", "host", "p", "why")
                    for i, v in enumerate(Verb))
    plan = Plan(actions=actions, summary=summarize(actions, {}))
    assert {k: plan.summary[k] for k in ("add", "change", "destroy")} == {
        "add": 3, "change": 2, "destroy": 4}
    assert all(plan.summary[v] == 1 for v in Verb)
    marks = {line.split()[1]: line.split()[0] for line in render_text(plan).splitlines()
             if line.startswith("  ")}
    assert marks == {"create": "+", "stage": "+", "admit": "+", "update": "~", "drain": "~",
                     "delete": "-", "evict": "-", "release": "-", "reject": "-"}
    assert [v for v in Verb if v.removes] == ["drain", "delete", "evict", "release", "reject"]
    assert [v for v in Verb if v.creates] == ["create", "stage"]  # admit claims a live host


@pytest.mark.parametrize("formats", [PROBLEM_FORMATS, PLAN_FORMATS, APPLY_FORMATS,
                                     REVIEW_FORMATS], ids=lambda f: f.what)
def test_every_output_refuses_an_unknown_format_alike(formats: Formats[Any]) -> None:
    """Problems, plans, apply reports and reviews share one table type and one refusal."""
    assert formats.names[0] == "text" and "json" in formats.names
    with pytest.raises(UserError) as err:
        formats.render(None, "yaml")
    [problem] = err.value.problems
    assert (problem.code, problem.message, problem.hint) == (
        "XCE007", f"unknown {formats.what} format 'yaml'",
        f"use one of: {', '.join(formats.names)}")
