"""Markdown for a pull-request comment: a summary table, details folded, < 60,000 characters.

GitHub rejects comments over 65,536 characters, so the rendering stops adding lines when
its budget is spent and says that the full plan is in the saved plan file (CI artifact).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from compiler.problem_render import render_markdown as render_problems
from reconciler.plan.model import Note, Plan, Verb
from reconciler.plan.render.common import (
    NOTE_TITLES,
    TEXT_LIMIT,
    action_line,
    change_lines,
    outcome_line,
    shorten,
    summary_line,
    symbol,
    unknown_by_provider,
)

LIMIT = 60_000
_RESERVE = 1_000  # room for closing fences, the truncation note and the summary line
_MAX_PROBLEMS = 50  # each is a table row of up to a few hundred characters
_DIFF_SYMBOL = {"+": "+", "~": "!", "-": "-"}  # "!" is how diff highlighting marks a change


def _code(text: str) -> str:
    return text.replace("```", "'''")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace("\n", " ")


class _Budget:
    """Collects lines up to a size; sections add whole items (an action with its changes)."""

    def __init__(self, limit: int) -> None:
        self.lines: list[str] = []
        self.size = 0
        self.limit = limit

    def put(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.lines.append(line)
            self.size += len(line) + 1

    def section(self, title: str, items: Iterable[list[str]], total: int, fence: str) -> int:
        """A folded section with as many items as fit; returns how many were left out."""
        self.put(["<details>", f"<summary>{_cell(title)}</summary>", ""])
        if fence:
            self.put([f"```{fence}"])
        shown = 0
        for item in items:  # a generator: items past the budget are never even built
            if self.size + sum(len(line) + 1 for line in item) > self.limit:
                break
            self.put(item)
            shown += 1
        self.put(["```"] if fence else [])
        self.put(["</details>", ""])
        return total - shown


def _header(plan: Plan) -> list[str]:
    out = [f"### {summary_line(plan)}", ""]
    counts = [(v.value, plan.summary.get(v, 0)) for v in Verb if plan.summary.get(v, 0)]
    reported = [(name, len(getattr(plan, name))) for name in (*NOTE_TITLES, "unknown")]
    rows = counts + [(name.replace("_", "-"), n) for name, n in reported if n]
    if rows:
        out += ["| | count |", "|---|---:|", *[f"| {k} | {n} |" for k, n in rows], ""]
    if plan.blocked:
        out += ["**This plan is refused by a guard and cannot be applied:**", ""]
    if plan.problems:
        shown = plan.problems[:_MAX_PROBLEMS]
        out += [render_problems(shown).rstrip("\n"), ""]
        if len(plan.problems) > len(shown):
            out += [f"… and {len(plan.problems) - len(shown)} more problems (see the plan "
                    "file or `xce-plan --format text`).", ""]
    outcome = outcome_line(plan)
    if outcome is not None:
        out += [outcome, ""]
    return out


def _action_items(plan: Plan) -> Iterator[list[str]]:
    for a in plan.actions:
        yield [f"{_DIFF_SYMBOL[symbol(a.verb)]} {_code(action_line(a))}",
               *(f"!     {_code(c)}" for c in change_lines(a))]


def _note_items(notes: Iterable[Note]) -> Iterator[list[str]]:
    for n in notes:
        provider = f" [{_cell(shorten(n.provider))}]" if n.provider else ""
        yield [f"- `{_cell(shorten(n.entry))}`{provider} {_cell(shorten(n.reason, TEXT_LIMIT))}"]


def render_markdown(plan: Plan, limit: int = LIMIT) -> str:
    head = _header(plan)
    budget = _Budget(limit - _RESERVE - sum(len(h) + 1 for h in head))
    omitted = 0
    if plan.actions:
        omitted += budget.section(f"Actions in apply order ({len(plan.actions)})",
                                  _action_items(plan), len(plan.actions), "diff")
    for name, title in NOTE_TITLES.items():
        notes = getattr(plan, name)
        if notes:
            omitted += budget.section(f"{title}: {len(notes)}", _note_items(notes),
                                      len(notes), "")
    if plan.unknown:
        groups = unknown_by_provider(plan.unknown)
        items = ([f"- provider `{_cell(p)}`: {_cell(what)} — {_cell(why)}"]
                 for p, what, why in groups)
        omitted += budget.section(f"Unknown (nothing planned): {len(plan.unknown)}", items,
                                  len(groups), "")
    tail: list[str] = []
    if omitted:
        tail = [f"> **Truncated:** {omitted} items are not shown to keep this comment under "
                f"{limit:,} characters. The full plan is in the saved plan file (the CI "
                "job's plan artifact); `xce-plan --format text` shows all of it.", ""]
    return "\n".join([*head, *budget.lines, *tail]).rstrip("\n") + "\n"
