"""A markdown comment's size budget, shared fairly over its folded sections.

A pull request that adds 500 hosts must not spend the whole comment on its first group
(1,000 counters) and leave the others as empty code blocks. So every section that fits is
framed, keeps a reserved line that says what it does not show ("… and 480 more hosts:
cn[0021-0500]"), and gets its first few items; the room left is then shared out evenly
among the sections that still have items, and what one section leaves goes to the others.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from compiler.core.hostlist import fold_subjects
from compiler.core.text_limits import TEXT_LIMIT, shorten

FEW = 3  # items every section keeps before the rest of the room is shared
_MORE_SLACK = 40  # what ``shorten`` may add to the reserved "more" line

Item = tuple[list[str], tuple[str, ...]]  # an item's lines, and the entry ids they show


def cell(text: str) -> str:
    """Text in a table cell or a <summary>: no column break, no HTML, one line."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace("\n", " ")


def fenced(text: str) -> str:
    """A line inside a fenced block, which a ``` of its own would end early."""
    return text.replace("```", "'''")


def size(lines: Iterable[str]) -> int:
    return sum(len(line) + 1 for line in lines)


def frame(title: str, fence: str) -> tuple[list[str], list[str]]:
    """A folded section's opening and closing lines."""
    opening = ["<details>", f"<summary>{cell(title)}</summary>", "",
               *([f"```{fence}"] if fence else [])]
    return opening, [*(["```"] if fence else []), "</details>", ""]


def plural(noun: str) -> str:
    return noun if noun.endswith("s") else f"{noun[:-1]}ies" if noun.endswith("y") else f"{noun}s"


def folded(noun: str, ids: Sequence[str]) -> str:
    """The ids folded as hostlists, without their kind's prefix when all have it."""
    prefix = f"{noun}/"
    if all(i.startswith(prefix) for i in ids):
        return fold_subjects(i.removeprefix(prefix) for i in ids)
    return fold_subjects(ids)


def more_line(noun: str, ids: Sequence[str], limit: int = TEXT_LIMIT) -> str:
    """``… and 480 more hosts: cn[0021-0500]``, the ids shortened to ``limit``."""
    return f"… and {len(ids)} more {plural(noun)}: {shorten(folded(noun, ids), limit)}"


@dataclass(slots=True)
class Section:
    """One folded section: its title, its fence (``diff`` or none), its items in order, and
    every entry id it covers (how many are not shown, and which, says its last line)."""

    title: str
    fence: str
    items: Iterable[Item]
    ids: Sequence[str]
    noun: str
    shown: list[Item] = field(default_factory=list)
    _next: Iterator[Item] | None = None
    _peeked: Item | None = None

    def peek(self) -> Item | None:
        if self._peeked is None:
            if self._next is None:
                self._next = iter(self.items)
            self._peeked = next(self._next, None)
        return self._peeked

    def take(self) -> None:
        assert self._peeked is not None
        self.shown.append(self._peeked)
        self._peeked = None

    def hidden(self) -> list[str]:
        seen = {i for _, ids in self.shown for i in ids}
        return [i for i in self.ids if i not in seen]

    def reserve(self) -> int:
        """The frame and the "more" line at its longest (nothing shown)."""
        opening, closing = frame(self.title, self.fence)
        return size([*opening, *closing]) + len(self._more(self.ids)) + 1 + _MORE_SLACK

    def _more(self, ids: Sequence[str], limit: int = TEXT_LIMIT) -> str:
        line = more_line(self.noun, ids, limit)
        return fenced(line) if self.fence else cell(line)

    def lines(self) -> list[str]:
        opening, closing = frame(self.title, self.fence)
        hidden = self.hidden()
        whole = len(folded(self.noun, self.ids))  # reserve() counted it: no longer now
        more = [self._more(hidden, min(TEXT_LIMIT, whole))] if hidden else []
        return [*opening, *(line for lines, _ in self.shown for line in lines), *more,
                *closing]


class Fair:
    """Sections within ``limit`` characters: see the module's docstring."""

    def __init__(self, limit: int, sections: Sequence[Section]) -> None:
        self.sections: list[Section] = []
        self.dropped: list[Section] = []
        self.room = limit
        for s in sections:  # in order: a section that does not fit is left out whole
            need = s.reserve()
            if need <= self.room and not self.dropped:
                self.sections.append(s)
                self.room -= need
            else:
                self.dropped.append(s)
        self._share()

    def _take(self, s: Section, allowance: int) -> int:
        """Items of ``s`` up to ``allowance`` characters (and the room); what it used."""
        used = 0
        while (item := s.peek()) is not None:
            cost = size(item[0])
            if cost > self.room or used + cost > allowance:
                break
            s.take()
            self.room -= cost
            used += cost
        return used

    def _share(self) -> None:
        for _ in range(FEW):  # round by round: a few items of every section first
            for s in self.sections:
                item = s.peek()
                if item is not None and size(item[0]) <= self.room:
                    self._take(s, size(item[0]))
        while True:  # then even shares of what is left, until nobody can use more
            active = [s for s in self.sections if s.peek() is not None]
            if not active or sum(self._take(s, self.room // len(active)) for s in active) == 0:
                break
        for s in self.sections:  # shares too small for an item: the rest goes in order
            self._take(s, self.room)

    def lines(self) -> list[str]:
        return [line for s in self.sections for line in s.lines()]

    @property
    def omitted(self) -> int:
        """Entries not shown one by one (those of a "more" line, and of sections left out)."""
        return (sum(len(s.hidden()) for s in self.sections)
                + sum(len(s.ids) for s in self.dropped))
