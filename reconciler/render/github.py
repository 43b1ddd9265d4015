"""GitHub workflow commands for a plan (``xce-plan --format github``): an annotation on the
site-config line of each entry the plan destroys (``::warning``) or changes (``::notice``),
which a pull request shows beside its diff.

GitHub shows at most 10 annotations of each level per step, so the actions are grouped per
source line (ids folded as hostlists), destroys first, and past that limit one summary
annotation says how many more lines there are. An entry no longer in the config has no
line: it is shown at the item it belonged to (a host at its host group, read from the live
entry), else without a file. The plan's own problems come first, rendered as the compiler
renders problems; a plain summary line ends the document.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from compiler.cli.problem_render import render_github as render_problems
from compiler.cli.problem_render import workflow_command
from compiler.contract.supply_map import Entry
from compiler.core.problems import Severity, Where
from reconciler.plan.model import Action, Group, Plan, Verb
from reconciler.plan.parents import parents
from reconciler.render.common import change_lines, group_actions, outcome_line, summary_line

STEP_LIMIT = 10  # annotations of each level (error, warning, notice) GitHub shows per step
_SHOWN_CHANGES = 5  # field changes an annotation lists for a group of alike actions
# entry id → its item's file, line and column; None when it is not in the config
Place = Callable[[str], Where | None]
_MOVED = "Entries not in the config any more are shown at the item they belonged to."
_NOWHERE = "Not in the config, nor is anything they belonged to: no line to show them at."


@dataclass(slots=True)
class _Line:
    """The actions shown at one place: a site-config line, or no file at all."""

    where: Where | None
    actions: list[Action] = field(default_factory=list)
    moved: bool = False  # some entry is not in the config: shown at what it belonged to

    @property
    def destroys(self) -> bool:
        return any(a.verb.group is Group.DESTROY for a in self.actions)

    def title(self) -> str:
        """``xce-plan: delete 24, release 12, update 1``: the verbs, destroys first."""
        counts: dict[Verb, int] = {}
        for group in group_actions(self.actions):
            counts[group.verb] = counts.get(group.verb, 0) + len(group.actions)
        return "xce-plan: " + ", ".join(f"{verb} {n}" for verb, n in counts.items())

    def message(self, placed: bool) -> str:
        """Each group of actions on a line of its own, with the field changes its actions
        share (``attributes.rack: "A" → "B"``); ``placed``: the plan knows the config."""
        out: list[str] = []
        for group in group_actions(self.actions):
            out.append(group.line())
            alike = {tuple(change_lines(a)) for a in group.actions}
            if len(alike) == 1:
                out += [f"    {c}" for c in next(iter(alike))[:_SHOWN_CHANGES]]
        if placed and self.moved:
            out.append(_MOVED if self.where is not None else _NOWHERE)
        return "\n".join(out)

    def command(self, placed: bool) -> str:
        where = self.where
        return workflow_command("warning" if self.destroys else "notice", self.message(placed),
                                file=where.file if where else None,
                                line=where.line if where else None,
                                column=where.column if where else None, title=self.title())


def _parent_place(doc: Mapping[str, Any] | None, place: Place,
                  live: Mapping[str, Mapping[str, Any]], seen: frozenset[str]) -> Where | None:
    """The item of the nearest parent still in the config (a host's group, from the live
    entry), through parents that the plan removes too (a host's counter → its host)."""
    if doc is None:
        return None
    ids = parents(Entry.from_json(doc))
    for parent in ids:
        where = place(parent)
        if where is not None:
            return where
    for parent in ids:
        if parent in live and parent not in seen:
            where = _parent_place(live[parent], place, live, seen | {parent})
            if where is not None:
                return where
    return None


def _lines(plan: Plan, place: Place) -> list[_Line]:
    """The destroys and changes by the place they are shown at, in file and line order,
    those without a file last."""
    live = {a.entry: a.before for a in plan.actions if a.before is not None}
    lines: dict[tuple[bool, str, int, int], _Line] = {}
    for action in plan.actions:
        if action.verb.group is Group.ADD:
            continue
        where = place(action.entry)
        moved = where is None
        if moved:
            where = _parent_place(action.before, place, live, frozenset({action.entry}))
        line = lines.setdefault(_spot(where, action), _Line(where))
        line.actions.append(action)
        line.moved |= moved
    return [lines[spot] for spot in sorted(lines)]


def _spot(where: Where | None, action: Action) -> tuple[bool, str, int, int]:
    """The actions at the same file, line and column are one annotation; those without a
    file are two, after all others: the destroys, then the changes."""
    if where is None:
        return True, "", 0, action.verb.group is not Group.DESTROY
    return False, where.file, where.line or 0, where.column or 0


def _within_limits(lines: list[_Line], warning_room: int, placed: bool) -> list[str]:
    """The annotations GitHub will show: destroys (warnings) first, then changes (notices),
    each level within its limit; past it, one summary of how many lines were left out,
    in a slot of the most severe level left out."""
    warnings = [ln for ln in lines if ln.destroys]
    notices = [ln for ln in lines if not ln.destroys]
    level = None
    if len(warnings) > warning_room:
        level = "warning" if warning_room > 0 else "notice"
    elif len(notices) > STEP_LIMIT:
        level = "notice"
    shown = [*warnings[:warning_room - (level == "warning")],
             *notices[:STEP_LIMIT - (level == "notice")]]
    out = [ln.command(placed) for ln in shown]
    if level is None:
        return out
    left = len(lines) - len(shown)
    return [*out, workflow_command(
        level, f"{left} more site-config lines with destroys or changes are not annotated: "
        f"GitHub shows {STEP_LIMIT} annotations of each level per step. The plan "
        "(xce-plan --format text or markdown) lists every action.",
        title=f"xce-plan: {left} more lines")]


def render_github(plan: Plan, place: Place | None = None) -> str:
    """The document: the plan's problems, the annotations, then ``Plan: N to add, …``.

    ``place`` finds an entry's site-config line (``reconciler.pipeline.Origins.place``);
    without it (a plan from a compiled map) the annotations have no file."""
    problems = render_problems(plan.problems)
    warning_problems = sum(1 for p in plan.problems if p.severity is Severity.WARNING)
    lines = _lines(plan, place or (lambda _: None))
    out = _within_limits(lines, max(STEP_LIMIT - warning_problems, 0), place is not None)
    outcome = outcome_line(plan)
    out.append(summary_line(plan) if outcome is None else outcome)
    if plan.blocked:
        out.append("This plan is refused by a guard (the errors above) and cannot be applied.")
    return problems + "\n".join(out) + "\n"
