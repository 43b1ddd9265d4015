"""Markdown for a pull-request comment: a summary table, guard problems, then the actions
grouped by verb, kind and provider (destroys first), ids folded as hostlists, each group's
entries inside ``<details>``; counters folded into their hosts' hostlists with amounts.

GitHub rejects comments over 65,536 characters, so the rendering shares a budget (60,000)
fairly over the groups (``budget.Fair``): each keeps a few lines and says how many more
entries it has and which; past the budget it says where the full plan is: the CI artifact
it is given the name of, else the saved plan file, else ``xce-plan --format json``; never a
guess.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from compiler.cli.problem_render import render_markdown as render_problems
from compiler.contract.vocabulary import EntryKind
from compiler.core.text_limits import TEXT_LIMIT, shorten
from reconciler.plan.model import Action, Group, Note, Plan, Verb
from reconciler.render.budget import Fair, Item, Section, cell, fenced, size
from reconciler.render.common import (
    NOTE_TITLES,
    ActionGroup,
    Counted,
    action_line,
    change_lines,
    counter_what,
    entries,
    fold_counters,
    group_actions,
    outcome_line,
    summary_line,
    symbol,
    unknown_groups,
)

# What the plan may use of the most characters GitHub takes in a comment (65,536:
# reconciler.pr.github.BODY_LIMIT): room for a heading the CI job adds.
LIMIT = 60_000
_RESERVE = 1_000  # room for the truncation note
_MAX_PROBLEMS = 50  # each is a table row of up to a few hundred characters
_DIFF_SYMBOL = {"+": "+", "~": "!", "-": "-"}  # "!" is how diff highlighting marks a change

__all__ = ["LIMIT", "cell", "fenced", "render_markdown"]


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


def _counted(a: Action) -> Counted | None:
    """A counter action a folded line can show: created, removed, or only its amount changed."""
    if a.kind != EntryKind.COUNTER or any(c.path != "amount" for c in a.changes):
        return None
    if a.changes:
        before, after = a.changes[0].before, a.changes[0].after
    elif a.verb.group is Group.ADD:
        before, after = None, (a.after or {}).get("amount")
    elif a.verb.removes:
        before, after = (a.before or {}).get("amount"), None
    else:
        return None
    if before is None and after is None:
        return None
    tag = "  (destructive)" if a.destructive else ""
    return Counted(a.entry, counter_what(a.entry, before, after),
                   f"  {shorten(a.reason, TEXT_LIMIT)}{tag}")


def _action_items(group: ActionGroup) -> Iterator[Item]:
    """One item per action, in apply order; counters folded by host and amounts."""
    sign = _DIFF_SYMBOL[symbol(group.verb)]
    provider = f"  [{shorten(group.provider)}]" if group.provider else ""
    counted = [_counted(a) for a in group.actions] if group.kind == EntryKind.COUNTER else []
    if counted and all(c is not None for c in counted):
        for line, tail, ids in fold_counters(c for c in counted if c is not None):
            yield [f"{sign} {fenced(f'{group.verb:<8} {line}{provider}{tail}')}"], ids
        return
    for a in group.actions:
        yield ([f"{sign} {fenced(action_line(a))}",
                *(f"!     {fenced(c)}" for c in change_lines(a))], (a.entry,))


def _note_items(notes: Iterable[Note]) -> Iterator[Item]:
    for n in notes:
        provider = f" [{cell(shorten(n.provider))}]" if n.provider else ""
        yield ([f"- `{cell(shorten(n.entry))}`{provider} {cell(shorten(n.reason, TEXT_LIMIT))}"],
               (n.entry,))


def _unknown_items(groups: list[tuple[str, str, list[str]]]) -> Iterator[Item]:
    for provider, why, ids in groups:
        what = shorten(ids[0]) if len(ids) == 1 else entries(len(ids))
        yield ([f"- provider `{cell(shorten(provider))}`: {cell(what)} — "
                f"{cell(shorten(why, TEXT_LIMIT))}"], tuple(ids))


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


def _sections(plan: Plan) -> list[Section]:
    """The action groups, then the reported lists, then the unknown entries."""
    out = [Section(g.line(), "diff", _action_items(g), [a.entry for a in g.actions], g.kind)
           for g in group_actions(plan.actions)]
    for name, title in NOTE_TITLES.items():
        listed: tuple[Note, ...] = getattr(plan, name)
        if listed:
            out.append(Section(f"{title}: {len(listed)}", "", _note_items(listed),
                               [n.entry for n in listed], "entry"))
    if plan.unknown:
        groups = unknown_groups(plan.unknown)
        out.append(Section(f"Unknown (nothing planned): {len(plan.unknown)}", "",
                           _unknown_items(groups), [i for *_, ids in groups for i in ids],
                           "entry"))
    return out


def render_markdown(plan: Plan, limit: int = LIMIT, *, artifact: str | None = None,
                    plan_file: str | None = None) -> str:
    """The comment; ``artifact`` and ``plan_file`` are what the truncation note names."""
    head = _header(plan)
    if plan.actions:
        head += [f"#### Actions: {len(plan.actions)}, destroys first; each group's entries "
                 "in apply order", ""]
    budget = Fair(limit - _RESERVE - size(head), _sections(plan))
    tail: list[str] = []
    if budget.omitted:
        tail = [f"> **Truncated:** {budget.omitted} entries are not shown one by one to keep "
                f"this comment under {limit:,} characters. {_where_full(artifact, plan_file)}",
                ""]
    return "\n".join([*head, *budget.lines(), *tail]).rstrip("\n") + "\n"
