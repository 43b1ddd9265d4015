"""The report as a reviewer reads it (text), as CI parses it (json), and the per-action lines."""

from __future__ import annotations

import io
import json
import re

from syrupy.assertion import SnapshotAssertion

from compiler.problems import Severity
from compiler.textstyle import Style
from reconciler.apply import ApplyReport, Outcome, Status, codes, render
from reconciler.apply.progress import Bar, PlainLines, sink_for
from reconciler.plan.model import Action, Verb


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
                hint=codes.HINTS[codes.SKIP_DEPENDENCY]),
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
