"""The config diff (``compiler.site_repo.config_diff``) beside the live plan, in every ``--format``.

Markdown puts "What the config changes" above "What the cluster will get", both within the
comment's budget (``LIMIT``): the config diff has at least ``CONFIG_SHARE`` of it, the plan
the rest, and whatever one leaves goes to the other. The planning settings that changed
(safety values among them) are always shown, old → new, whatever the budget. Entries are
grouped as the plan's are (removed first, then changed, then added; by kind and host group,
ids folded as hostlists), each group's entries inside ``<details>``, counters folded into
their hosts' hostlists with their amounts; the budget is shared fairly over the groups
(``budget.Fair``). JSON adds a ``config_diff`` member to the plan
document; text, and every other format, a section after the plan.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from compiler.contract.supply_map import Entry
from compiler.contract.vocabulary import EntryKind
from compiler.core.canonical import dumps
from compiler.core.hostlist import fold_subjects
from compiler.core.text_limits import TEXT_LIMIT, shorten
from compiler.core.textstyle import Style
from compiler.policy.review_render import render_markdown as review_markdown
from compiler.policy.review_render import render_text as review_text
from compiler.site_repo.config_diff import (
    ConfigDiff,
    EntriesDiff,
    EntryChange,
    FieldChange,
    host_group,
)
from reconciler.plan.model import Plan
from reconciler.render.budget import Fair, Item, Section, cell, fenced
from reconciler.render.common import (
    Counted,
    counter_what,
    entries,
    fold_counters,
    value,
)
from reconciler.render.jsonfmt import plan_json
from reconciler.render.markdown import LIMIT

CONFIG_SHARE = 20_000  # of the markdown LIMIT: the config diff's at least, when the plan is big
CLUSTER = "## What the cluster will get"
_RESERVE = 1_000  # room for the truncation note
_ITEM_SIGN = {"+": "+", "-": "-", "~": "!"}  # "!" is how diff highlighting marks a change


@dataclass(frozen=True, slots=True)
class EntryGroup:
    """Entries added (+), removed (-) or changed (~) of one kind in one host group (and, for
    changes, with the same fields changed), as a reviewer reads them together."""

    sign: str
    kind: str
    group: str | None
    ids: tuple[str, ...]
    changes: tuple[EntryChange, ...] = ()
    entries: tuple[Entry, ...] = ()

    def line(self) -> str:
        """``+ 16 host: host/cn[0961-0976] (group cpu-b)``; a change names its fields."""
        folded = shorten(fold_subjects(self.ids), TEXT_LIMIT)
        where = f" (group {shorten(self.group)})" if self.group else ""
        paths = dict.fromkeys(f.path for c in self.changes[:1] for f in c.fields)
        fields = f": {shorten(', '.join(paths), TEXT_LIMIT)}" if paths else ""
        return f"{self.sign} {len(self.ids)} {shorten(self.kind)}: {folded}{where}{fields}"


def _grouped(sign: str, members: Iterable[tuple[Entry, EntryChange | None]]) -> list[EntryGroup]:
    groups: dict[tuple[str, str, tuple[str, ...]], list[tuple[Entry, EntryChange | None]]] = {}
    for entry, change in members:
        paths = tuple(f.path for f in change.fields) if change is not None else ()
        groups.setdefault((entry.kind, host_group(entry) or "", paths), []).append(
            (entry, change))
    return [EntryGroup(sign, kind, group or None, tuple(e.id for e, _ in listed),
                       tuple(c for _, c in listed if c is not None),
                       tuple(e for e, _ in listed))
            for (kind, group, _), listed in sorted(groups.items())]


def entry_groups(found: EntriesDiff) -> list[EntryGroup]:
    """Removed first, then changed, then added, as the plan puts its destroys first."""
    return [*_grouped("-", ((e, None) for e in found.removed)),
            *_grouped("~", ((c.entry, c) for c in found.changed)),
            *_grouped("+", ((e, None) for e in found.added))]


def field_line(change: FieldChange) -> str:
    return f"{shorten(change.path)}: {value(change.before)} → {value(change.after)}"


def summary(diff: ConfigDiff) -> str:
    """One sentence: how many entries, and whether the settings changed."""
    e = diff.entries
    said = ("entries not compared" if e is None else
            f"{entries(len(e.added))} added, {len(e.removed)} removed, {len(e.changed)} changed"
            if e else "no entry added, removed or changed")
    if diff.settings:
        said += f"; {len(diff.settings)} planning setting(s) changed"
    return said


def render_text(diff: ConfigDiff, style: Style | None = None) -> str:
    s = style or Style(color=False)
    paint = {"+": s.green, "~": s.yellow, "-": s.red}
    out = [s.bold(f"What the config changes (against {diff.label}): {summary(diff)}")]
    out += [f"  note: {shorten(note, TEXT_LIMIT)}" for note in diff.notes]
    for group in entry_groups(diff.entries or EntriesDiff()):
        out.append(f"  {paint[group.sign](group.sign)}{group.line()[1:]}")
        out += [f"      {paint['~']('~')} {shorten(c.entry.id)}  {field_line(f)}"
                for c in group.changes for f in c.fields]
    out += [f"  {paint['~']('~')} settings  {field_line(f)}" for f in diff.settings]
    text = "\n".join(out) + "\n"
    return text if diff.review is None else f"{text}\n{review_text(diff.review, s)}"


def _counted(group: EntryGroup) -> list[Counted] | None:
    """The group's counters as folded lines show them (None: not counters, or a change of
    more than their amount)."""
    if group.kind != EntryKind.COUNTER:
        return None
    if not group.changes:
        if any(e.amount is None for e in group.entries):
            return None
        return [Counted(e.id, counter_what(e.id, *((None, e.amount) if group.sign == "+"
                                                  else (e.amount, None))))
                for e in group.entries]
    if any(len(c.fields) != 1 or c.fields[0].path != "amount" for c in group.changes):
        return None
    return [Counted(c.entry.id, counter_what(c.entry.id, c.fields[0].before, c.fields[0].after))
            for c in group.changes]


def _items(group: EntryGroup) -> Iterator[Item]:
    sign = _ITEM_SIGN[group.sign]
    counted = _counted(group)
    if counted is not None:
        yield from (([f"{sign} {fenced(line)}"], ids) for line, _, ids in fold_counters(counted))
        return
    if not group.changes:
        yield from (([f"{sign} {fenced(shorten(i))}"], (i,)) for i in group.ids)
    for c in group.changes:
        yield ([f"{sign} {fenced(shorten(c.entry.id))}",
                *(f"{sign}     {fenced(field_line(f))}" for f in c.fields)], (c.entry.id,))


def _settings(diff: ConfigDiff) -> list[str]:
    """The planning settings that changed, old → new: always shown, whatever the budget
    (they are few, and a safety value is what a reviewer must see)."""
    if not diff.settings:
        return []
    return [f"**Planning settings changed: {len(diff.settings)}**", "", "```diff",
            *(f"! {fenced(field_line(f))}" for f in diff.settings), "```", ""]


def _review(diff: ConfigDiff, limit: int) -> list[str]:
    """The policy review's own markdown; past half the budget, only its headline."""
    if diff.review is None:
        return []
    text = review_markdown(diff.review).rstrip("\n")
    if len(text) > limit // 2:
        text = (text.split("\n\n")[0] + f"\n\n{len(diff.review.changes)} changes: "
                f"`xce-policy review --base {cell(shorten(diff.base))}` lists them.")
    return [text, ""]


def render_markdown(diff: ConfigDiff, limit: int = CONFIG_SHARE) -> str:
    """The section; past ``limit`` characters, the entries left out are counted."""
    head = [f"## What the config changes (against {cell(shorten(diff.label))})", "",
            f"{summary(diff)}.", ""]
    head += [line for note in diff.notes for line in (f"> **Note:** "
                                                      f"{cell(shorten(note, TEXT_LIMIT))}", "")]
    head += _review(diff, limit)
    head += _settings(diff)
    budget = Fair(limit - _RESERVE - len("\n".join(head)) - 1,
                  [Section(g.line(), "diff", _items(g), g.ids, g.kind)
                   for g in entry_groups(diff.entries or EntriesDiff())])
    tail = [] if not budget.omitted else [
        f"> **Truncated:** {budget.omitted} entries are not shown one by one to keep this "
        f"section under {limit:,} characters; the member `config_diff` of `xce-plan --base "
        f"{cell(shorten(diff.base))} --format json` lists them all.", ""]
    return "\n".join([*head, *budget.lines(), *tail]).rstrip("\n") + "\n"


def markdown_beside(diff: ConfigDiff, plan: Callable[[int], str], limit: int = LIMIT) -> str:
    """The config diff, then the plan (``plan(limit)`` renders it), within ``limit``."""
    room = limit - len(CLUSTER) - 3  # the blank lines around the plan's heading
    first = room - CONFIG_SHARE
    shown = plan(first)
    config = render_markdown(diff, room - len(shown))
    if room - len(config) > first:  # the config diff left the plan more room
        shown = plan(room - len(config))
    return f"{config}\n{CLUSTER}\n\n{shown}"


def beside(diff: ConfigDiff, fmt: str, plan: Plan, rendered: Callable[[int], str],
           style: Style | None = None) -> str:
    """The plan in ``fmt`` with the config diff: ``rendered(limit)`` is the plan as
    xce-plan renders it (``limit`` counts only for markdown)."""
    if fmt == "json":
        return dumps({**plan_json(plan), "config_diff": diff.to_json()}).decode()
    if fmt == "markdown":
        return markdown_beside(diff, rendered)
    return f"{rendered(LIMIT)}\n{render_text(diff, style)}"
