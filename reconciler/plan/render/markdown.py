"""Markdown for a pull-request comment: a summary table, guard problems, then the actions
grouped by verb, kind and provider (destroys first), ids folded as hostlists, each group's
entries inside ``<details>``.

GitHub rejects comments over 65,536 characters, so the rendering stops adding lines when
its budget (60,000) is spent and says where the full plan is: the CI artifact it is given
the name of, else the saved plan file, else ``xce-plan --format json``; never a guess.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from compiler.problem_render import render_markdown as render_problems
from reconciler.plan.model import Note, Plan, Verb
from reconciler.plan.render.common import (
    NOTE_TITLES,
    TEXT_LIMIT,
    ActionGroup,
    action_line,
    change_lines,
    group_actions,
    outcome_line,
    shorten,
    summary_line,
    symbol,
    unknown_by_provider,
)

GITHUB_LIMIT = 65_536  # the most characters GitHub accepts in a comment
LIMIT = 60_000  # what the plan may use of it: room for a heading the CI job adds
_RESERVE = 1_000  # room for the truncation note
_MAX_PROBLEMS = 50  # each is a table row of up to a few hundred characters
_DIFF_SYMBOL = {"+": "+", "~": "!", "-": "-"}  # "!" is how diff highlighting marks a change


def fenced(text: str) -> str:
    """A line inside a fenced block, which a ``` of its own would end early."""
    return text.replace("```", "'''")


def cell(text: str) -> str:
    """Text in a table cell or a <summary>: no column break, no HTML, one line."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace("\n", " ")


def _frame(title: str, fence: str) -> tuple[list[str], list[str]]:
    """A folded section's opening and closing lines."""
    opening = ["<details>", f"<summary>{cell(title)}</summary>", "",
               *([f"```{fence}"] if fence else [])]
    return opening, [*(["```"] if fence else []), "</details>", ""]


def _size(lines: Iterable[str]) -> int:
    return sum(len(line) + 1 for line in lines)


class Budget:
    """Collects lines up to a size; sections add whole items (an action with its changes).

    The titles of the sections still to come are reserved (up to half the budget), so the
    items of the first section never crowd out the summary lines of the others."""

    def __init__(self, limit: int, titles: list[tuple[str, str]]) -> None:
        self.lines: list[str] = []
        self.size = 0
        self.limit = limit
        self._frames = [_size([*o, *c]) for o, c in (_frame(t, f) for t, f in titles)]
        self._reserved = min(sum(self._frames), limit // 2)

    def put(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.lines.append(line)
            self.size += len(line) + 1

    def _fits(self, *parts: list[str]) -> bool:
        return self.size + self._reserved + sum(_size(part) for part in parts) <= self.limit

    def section(self, title: str, items: Iterable[list[str]], total: int, fence: str) -> int:
        """A folded section (one of the titles given, in their order) with as many items as
        fit; returns how many were left out (all of them when not even its title fits)."""
        opening, closing = _frame(title, fence)
        self._frames.pop(0)
        self._reserved = min(self._reserved, sum(self._frames))
        if not self._fits(opening, closing):
            return total
        self.put(opening)
        shown = 0
        for item in items:  # a generator: items past the budget are never even built
            if not self._fits(item, closing):
                break
            self.put(item)
            shown += 1
        self.put(closing)
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


def _action_items(group: ActionGroup) -> Iterator[list[str]]:
    for a in group.actions:
        yield [f"{_DIFF_SYMBOL[symbol(a.verb)]} {fenced(action_line(a))}",
               *(f"!     {fenced(c)}" for c in change_lines(a))]


def _note_items(notes: Iterable[Note]) -> Iterator[list[str]]:
    for n in notes:
        provider = f" [{cell(shorten(n.provider))}]" if n.provider else ""
        yield [f"- `{cell(shorten(n.entry))}`{provider} {cell(shorten(n.reason, TEXT_LIMIT))}"]


def _where_full(artifact: str | None, plan_file: str | None) -> str:
    """Where the whole plan is: only places that exist (xce-plan names the artifact only
    when it saved the plan file that the CI job keeps)."""
    json_hint = "`xce-plan --format json` shows all of it"
    if artifact:
        saved = f" (the saved plan file `{_code_span(plan_file)}`)" if plan_file else ""
        return f"The full plan is in the CI artifact `{_code_span(artifact)}`{saved}; {json_hint}."
    if plan_file:
        return f"The full plan is in the saved plan file `{_code_span(plan_file)}`; {json_hint}."
    return f"{json_hint[0].upper()}{json_hint[1:]}."


def _code_span(text: str) -> str:
    return cell(shorten(text)).replace("`", "'")


def render_markdown(plan: Plan, limit: int = LIMIT, *, artifact: str | None = None,
                    plan_file: str | None = None) -> str:
    """The comment; ``artifact`` and ``plan_file`` are what the truncation note names."""
    head = _header(plan)
    if plan.actions:
        head += [f"#### Actions: {len(plan.actions)}, destroys first; each group's entries "
                 "in apply order", ""]
    groups = group_actions(plan.actions)
    notes = [(f"{title}: {len(getattr(plan, name))}", getattr(plan, name))
             for name, title in NOTE_TITLES.items() if getattr(plan, name)]
    unknown = unknown_by_provider(plan.unknown)
    unknown_title = f"Unknown (nothing planned): {len(plan.unknown)}"
    budget = Budget(limit - _RESERVE - _size(head),
                     [*((g.line(), "diff") for g in groups), *((t, "") for t, _ in notes),
                      *([(unknown_title, "")] if unknown else [])])
    omitted = 0
    for group in groups:
        omitted += budget.section(group.line(), _action_items(group), len(group.actions),
                                  "diff")
    for title, listed in notes:
        omitted += budget.section(title, _note_items(listed), len(listed), "")
    if unknown:
        items = ([f"- provider `{cell(p)}`: {cell(what)} — {cell(why)}"]
                 for p, what, why in unknown)
        omitted += budget.section(unknown_title, items, len(unknown), "")
    tail: list[str] = []
    if omitted:
        tail = [f"> **Truncated:** {omitted} items are not shown to keep this comment under "
                f"{limit:,} characters. {_where_full(artifact, plan_file)}", ""]
    return "\n".join([*head, *budget.lines, *tail]).rstrip("\n") + "\n"
