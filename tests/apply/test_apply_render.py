"""The report as a reviewer reads it (text), as CI parses it (json), and the per-action lines."""

from __future__ import annotations

import io
import json
import re
from dataclasses import replace

from syrupy.assertion import SnapshotAssertion

from compiler.core.problems import Severity
from compiler.core.textstyle import Style
from reconciler.apply import ApplyReport, Outcome, Status, codes
from reconciler.apply.progress import Bar, PlainLines, sink_for
from reconciler.plan.model import Action, Note, Verb
from reconciler.render.apply import render


def _action(verb: str, entry: str, provider: str = "shared-fs") -> Action:
    return Action(f"{verb}:{entry}", Verb(verb), entry, entry.split("/")[0], provider, "test")


def _report() -> ApplyReport:
    vol = _action("create", "volume/shared")
    outcomes = (
        Outcome(vol, "a" * 64, Status.FAILED, attempts=4, code=codes.ACTION_FAILED,
                message="UNAVAILABLE: proxy-a is down (after 4 attempts)",
                hint=codes.HINTS[codes.ACTION_FAILED], error="UNAVAILABLE", seconds=3.5),
        Outcome(_action("create", "volume-dir/shared/alice"), "b" * 64, Status.SKIPPED,
                code=codes.SKIP_DEPENDENCY, message="depends on create:volume/shared, which failed",
                hint=codes.HINTS[codes.SKIP_DEPENDENCY], cause=vol.id),
        Outcome(_action("create", "host/cn0001", "controller"), "c" * 64, Status.DONE,
                attempts=1, seconds=0.01),
        Outcome(_action("create", "host/cn0002", "controller"), "d" * 64, Status.ALREADY_DONE),
        Outcome(_action("release", "host/cn0099", "controller"), "e" * 64, Status.SKIPPED,
                code=codes.SKIP_DESTROY, message="'release' is destructive and this apply has "
                "no destroy permission", hint=codes.HINTS[codes.SKIP_DESTROY]),
    )
    notice = codes.problem(codes.RESUMED, "finishing after 1 interrupted run(s)", "apply/east",
                           "", Severity.WARNING)
    return ApplyReport("sha256:" + "1" * 64, "sha256:" + "2" * 64, "0f1e2d3c4b5a69788796",
                       "apply/east@20260101T000000Z-0a0b0c0d", 7, outcomes, (notice,),
                       seconds=4.25)


def test_text_report(snapshot: SnapshotAssertion) -> None:
    report = _report()
    assert report.exit_code == 1 and report.result == "failed"
    assert render(report, "text", Style(color=False)) == snapshot


def test_json_report(snapshot: SnapshotAssertion) -> None:
    doc = json.loads(render(_report(), "json"))
    assert doc["counts"] == {"done": 1, "already-done": 1, "failed": 1, "skipped": 2}
    assert doc == snapshot


def test_stale_report(snapshot: SnapshotAssertion) -> None:
    hint = "make the plan again"
    stale = tuple(codes.problem(codes.STALE_ENTRIES, f"{e} changed since the plan was made",
                                e, hint) for e in ("host/cn0001", "volume/shared"))
    report = ApplyReport("sha256:" + "1" * 64, "sha256:" + "2" * 64, None, None, 3,
                         stale=stale)
    assert (report.result, report.exit_code) == ("stale", 3)
    assert render(report, "text") == snapshot


def test_plain_progress_lines(snapshot: SnapshotAssertion) -> None:
    out = io.StringIO()
    lines = PlainLines(out)
    lines.start(5)
    for outcome in _report().outcomes:
        lines.update(outcome)
    lines.close()
    assert out.getvalue() == snapshot


def test_progress_is_plain_off_a_terminal_and_a_bar_on_one() -> None:
    assert isinstance(sink_for(io.StringIO()), PlainLines)

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    bar = Bar(terminal)
    bar.start(5)
    for outcome in _report().outcomes:
        bar.update(outcome)
    bar.close()
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", terminal.getvalue())  # no colours
    assert "failed create volume/shared (shared-fs)" in shown and "5/5" in shown


def _owner_warning(user: str) -> str:
    return (f"user '{user}' does not resolve to a uid on this host: /fs/shared/xce/{user} is "
            "left owned by root; the intended owner is recorded (owner_applied: false)")


def _warned(users: list[str]) -> ApplyReport:
    outcomes = tuple(Outcome(_action("create", f"volume-dir/shared/{u}"), f"{i:064x}",
                             Status.DONE, warnings=(_owner_warning(u),))
                     for i, u in enumerate(users))
    return ApplyReport("sha256:" + "1" * 64, "sha256:" + "2" * 64, None, "apply/east@x", 1,
                       outcomes)


def test_a_warning_alike_for_many_actions_is_said_once() -> None:
    users = [f"user{i:02d}" for i in range(1, 21)]
    other = Outcome(_action("create", "volume-dir/shared/zed"), "f" * 64, Status.DONE,
                    warnings=("group 'staff' does not resolve to a gid on this host",))
    report = _warned(users)
    text = render(replace(report, outcomes=(*report.outcomes, other)), "text")
    assert text.splitlines()[1:4] == [
        "Done with warnings (21):",
        "  create volume-dir/shared/user[01-20] (shared-fs), 20 actions: "
        + _owner_warning("<name>"),
        "  create volume-dir/shared/zed (shared-fs): group 'staff' does not resolve to a gid "
        "on this host",
    ]
    doc = json.loads(render(_warned(users), "json"))
    assert [a["warnings"] for a in doc["actions"]] == [[_owner_warning(u)] for u in users]


def test_actions_an_earlier_run_did_are_one_log_line() -> None:
    out = io.StringIO()
    lines = PlainLines(out)
    lines.start(3297)
    for i in range(3296):
        kind = "host" if i < 1050 else "counter"
        lines.update(Outcome(_action("create", f"{kind}/e{i}", "controller"), f"{i:064x}",
                             Status.ALREADY_DONE))
    lines.update(Outcome(_action("create", "volume/shared"), "f" * 64, Status.DONE, seconds=0.5))
    lines.close()
    assert out.getvalue().splitlines() == [
        "[3296/3297] already-done 3,296 actions done by an earlier run of this plan "
        "(2,246 counter, 1,050 host)",
        "[3297/3297] done         create volume/shared (shared-fs) 0.50s",
    ]


def test_an_apply_that_could_not_plan_everything_is_not_a_success() -> None:
    """xce-apply --auto-approve with a provider that did not report: the rest is applied,
    exit 1, and the report says what was not planned (before: exit 0, silently partial)."""
    unknown = tuple(Note(f"instance/burst{i}", "instance", "cloud-burst",
                         "provider cloud-burst did not report: UNAVAILABLE") for i in (1, 2))
    report = replace(_warned(["alice"]), unknown=unknown)
    assert (report.result, report.exit_code) == ("incomplete", 1)
    text = render(report, "text")
    assert text.startswith("Applied, incompletely, plan 111111111111")
    assert "  ? cloud-burst: 2 entries — provider cloud-burst did not report: UNAVAILABLE" in text
    doc = json.loads(render(report, "json"))
    assert doc["result"] == "incomplete" and doc["exit_code"] == 1
    assert [n["entry"] for n in doc["unknown"]] == ["instance/burst1", "instance/burst2"]
