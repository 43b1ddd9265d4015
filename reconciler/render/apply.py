"""The apply report as text (for people) or json (for CI), from the same ApplyReport data.

Text lists only what needs attention (failed and skipped actions, why the apply stopped,
stale entries, entries nothing could be planned for) and counts the rest, and says once
what many actions share (the same warning for 20 user directories), so a 100,000-action
apply still reads in one screen when it went well; json lists every action with its
op_id for tools and audits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from compiler.cli.formats import Formats
from compiler.cli.problem_render import generic, group_by_subject
from compiler.core.canonical import dumps
from compiler.core.hostlist import fold_subjects
from compiler.core.problems import Problem
from compiler.core.textstyle import Style
from reconciler.apply import codes
from reconciler.apply.report import ApplyReport, FollowOn, Outcome, Status, waiting_text
from reconciler.render.common import entries, unknown_by_provider


def _short(digest: str) -> str:
    return digest.removeprefix("sha256:")[:12]


WARNINGS_SHOWN = 20  # warnings (each said once for the actions it is alike for) listed


def _headline(report: ApplyReport, s: Style) -> str:
    what = f"plan {_short(report.plan_digest)}"
    if report.revision:
        what += f" (revision {report.revision[:12]})"
    if report.result == "stale":
        return f"{s.red('Refused')} {what}: it is stale"
    run = f" as run {report.run_id}, epoch {report.epoch}" if report.run_id else ""
    word = {"applied": s.green("Applied"), "incomplete": s.yellow("Applied, incompletely,")
            }.get(report.result, s.red("Failed to apply"))
    return f"{word} {what}{run}"


def _outcome_lines(outcome: Outcome) -> list[str]:
    a = outcome.action
    lines = [f"  {a.verb} {a.entry} ({a.provider or 'no provider'}): "
             f"{outcome.code} {outcome.message}"]
    if outcome.hint:
        lines.append(f"    hint: {outcome.hint}")
    return lines


def _not_done_lines(report: ApplyReport, s: Style) -> list[str]:
    """Failed actions one by one; skips of their own; and what waited on those, one line
    per cause (a failed dataset copy keeps 324 actions waiting: one line, not 324)."""
    out = []
    failed = [o for o in report.outcomes if o.status is Status.FAILED]
    if failed:
        out.append(f"{s.bold('Failed')} ({len(failed)}):")
        for outcome in failed:
            out.extend(_outcome_lines(outcome))
    follow_ons = report.follow_ons()
    waited = {o.action.id for f in follow_ons for o in f.waited}
    skipped = [o for o in report.outcomes
               if o.status is Status.SKIPPED and o.action.id not in waited]
    if skipped:
        out.append(f"{s.bold('Skipped')} ({len(skipped)}):")
        out.extend(_skipped_lines(skipped))
    if follow_ons:
        out.append(f"{s.bold('Not run')} ({len(waited)}), waiting on an action that failed or "
                   "was skipped:")
        out.extend(_follow_on_line(f) for f in follow_ons)
        if any(f.cause.status is Status.FAILED for f in follow_ons):  # a gate's hint is above
            out.append(f"  hint: {codes.HINTS[codes.SKIP_DEPENDENCY]}")
    return out


def _skipped_lines(skipped: Sequence[Outcome]) -> list[str]:
    """Skips of their own (a gate, a stop), each once for the actions it is alike for (the
    same code and words but for the entry's name), naming their entries compactly."""
    groups: dict[tuple[str | None, str, str], list[Outcome]] = {}
    for o in skipped:
        key = (o.code, generic(o.message, o.action.entry), o.hint)
        groups.setdefault(key, []).append(o)
    out = []
    for (code, message, hint), alike in groups.items():
        if len(alike) == 1:
            out.extend(_outcome_lines(alike[0]))
            continue
        out.append(f"  {len(alike)} actions, {waiting_text(alike)}: {code} {message}")
        if hint:
            out.append(f"    hint: {hint}")
    return out


def _follow_on_line(follow_on: FollowOn) -> str:
    """``324 actions not run because stage dataset-copy/… failed (XCE835): create …``."""
    cause, n = follow_on.cause, len(follow_on.waited)
    how = "failed" if cause.status is Status.FAILED else "was skipped"
    return (f"  {n} action{'s' * (n != 1)} not run because {cause.action.verb} "
            f"{cause.action.entry} {how} ({cause.code}): {waiting_text(follow_on.waited)}")


def _problem_lines(problems: tuple[Problem, ...]) -> list[str]:
    """One line per problem, or per problems alike but for their subject (stale entries);
    a hint shared by all of them is said once."""
    groups = group_by_subject(problems)
    hints = {g.problem.hint for g in groups}
    out = []
    for g in groups:
        p, alike = g.problem, len(g.subjects)
        line = f"  {p.code}: {p.message}" if alike == 1 else \
            f"  {p.code} ({alike} alike) {g.place()}: {p.message}"
        out.append(line + (f"\n    hint: {p.hint}" if len(hints) > 1 and p.hint else ""))
    if len(hints) == 1 and groups[0].problem.hint:
        out.append(f"  hint: {groups[0].problem.hint}")
    return out


def _warning_lines(warned: Sequence[Outcome]) -> list[str]:
    """Each warning once for the actions it is alike for (same verb and provider, the same
    words but for the entry's name), naming their entries compactly."""
    groups: dict[tuple[str, str | None, str], list[tuple[str, str]]] = {}
    for o in warned:
        a = o.action
        for w in o.warnings:
            key = (a.verb.value, a.provider, generic(w, a.entry))
            groups.setdefault(key, []).append((a.entry, w))
    out = []
    for (verb, provider, text), alike in list(groups.items())[:WARNINGS_SHOWN]:
        ids = [entry for entry, _ in alike]
        said = f", {len(ids)} actions: {text}" if len(ids) > 1 else f": {alike[0][1]}"
        out.append(f"  {verb} {fold_subjects(ids)} ({provider}){said}")
    if len(groups) > WARNINGS_SHOWN:
        out.append(f"  … and {len(groups) - WARNINGS_SHOWN} more (--format json lists all)")
    return out


def _unknown_lines(report: ApplyReport, s: Style) -> list[str]:
    if not report.unknown:
        return []
    return [s.yellow(f"Not planned, so not applied ({entries(len(report.unknown))}: what "
                     "they depend on is unknown):"),
            *(f"  ? {p}: {what} — {why}" for p, what, why in unknown_by_provider(report.unknown)),
            "  hint: bring the provider back and apply again (or plan again); the rest is done"]


def render_text(report: ApplyReport, style: Style | None = None) -> str:
    s = style or Style(color=False)
    out = [_headline(report, s)]
    if report.stale:
        out.append(f"{len(report.stale)} problem(s); nothing was changed:")
        out.extend(_problem_lines(report.stale))
    out.extend(_not_done_lines(report, s))
    warned = [o for o in report.outcomes if o.warnings]
    if warned:
        out.append(f"{s.yellow('Done with warnings')} ({len(warned)}):")
        out.extend(_warning_lines(warned))
    out.extend(_unknown_lines(report, s))
    if report.stopped is not None:
        out.append(f"{s.red('Stopped')}: {report.stopped.code} {report.stopped.message}")
        if report.stopped.hint:
            out.append(f"  hint: {report.stopped.hint}")
    if not report.stale:
        counts = report.counts()
        out.append(", ".join(f"{n} {status.replace('-', ' ')}" for status, n in counts.items())
                   + f" in {report.seconds:.1f}s")
    return "\n".join(out) + "\n"


def _outcome_json(o: Outcome) -> dict[str, Any]:
    a = o.action
    return {"id": a.id, "action": a.verb.value, "entry": a.entry, "provider": a.provider,
            "op_id": o.op_id, "status": o.status.value, "attempts": o.attempts, "code": o.code,
            "message": o.message, "hint": o.hint, "error": o.error,
            "warnings": list(o.warnings), "cause": o.cause,
            "seconds": round(o.seconds, 3)}


def _follow_on_json(follow_on: FollowOn) -> dict[str, Any]:
    cause = follow_on.cause
    return {"cause": cause.action.id, "action": cause.action.verb.value,
            "entry": cause.action.entry, "status": cause.status.value, "code": cause.code,
            "count": len(follow_on.waited), "waited": [o.action.id for o in follow_on.waited]}


def report_json(report: ApplyReport) -> dict[str, Any]:
    return {
        "result": report.result,
        "exit_code": report.exit_code,
        "plan_digest": report.plan_digest,
        "desired_digest": report.desired_digest,
        "revision": report.revision,
        "run_id": report.run_id,
        "epoch": report.epoch,
        "seconds": round(report.seconds, 3),
        "counts": report.counts(),
        "actions": [_outcome_json(o) for o in report.outcomes],
        "follow_on": [_follow_on_json(f) for f in report.follow_ons()],
        "stale": [p.to_json() for p in report.stale],
        "stopped": None if report.stopped is None else report.stopped.to_json(),
        "notices": [p.to_json() for p in report.notices],
        "unknown": [n.to_json() for n in report.unknown],
    }


def render_json(report: ApplyReport) -> str:
    return dumps(report_json(report)).decode()


FORMATS: Formats[ApplyReport] = Formats("apply report", render_text, json=render_json)


def render(report: ApplyReport, fmt: str, style: Style | None = None) -> str:
    return FORMATS.render(report, fmt, style)
