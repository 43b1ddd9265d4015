"""Findings alike but for their entry, as one line: 17 hosts past their join deadline are
``host/cn[0001-0017]``, said once, with one next step — as the plan's PR comment folds its
actions.

Findings are alike when they have the same category, kind, provider, states and fields,
and the same reason, fix, step and remark once the entry (``<subject>``, and its last part
``<name>``, as ``compiler.cli.problem_render.generic`` writes them) and the durations they
name (``compiler.core.units.duration_text``) are set aside. A fold names its entries folded as
hostlists are (``fold_subjects``, ``compress``), each duration as the range over its
findings (``2 d 3 h to 2 d 5 h``), and a fix command that targets exactly its entries
(``target_globs``). A finding whose id a command would have to quote is never folded.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from compiler.cli.problem_render import generic
from compiler.core.canonical import dumps_compact
from compiler.core.hostlist import compress, fold_subjects
from compiler.core.units import DURATION_TEXT_PATTERN, duration_seconds, duration_text
from reconciler.drift.model import Category, FieldDiff, Finding

_DURATION = re.compile(DURATION_TEXT_PATTERN)
_SLOT = "<duration>"
_LEAF = re.compile(r"[A-Za-z0-9._-]+")  # a last part that folds as hostlists do
_NUMBERED = re.compile(r"(.*?)([0-9]+)")
_GLOB_MAGIC = re.compile(r"([*?\[])")


@dataclass(frozen=True, slots=True)
class Fold:
    """One line of a report: ``findings`` alike but for their entry (at least one).
    ``entry`` is their ids folded; ``reason``, ``fix`` and ``step`` are said once for all."""

    findings: tuple[Finding, ...]
    entry: str
    reason: str
    fix: str | None
    step: str

    @property
    def first(self) -> Finding:
        return self.findings[0]

    @property
    def entries(self) -> tuple[str, ...]:
        return tuple(f.entry for f in self.findings)

    @property
    def size(self) -> int:
        return len(self.findings)

    @property
    def category(self) -> Category:
        return self.first.category

    @property
    def kind(self) -> str:
        return self.first.kind

    @property
    def provider(self) -> str | None:
        return self.first.provider

    @property
    def desired_state(self) -> str | None:
        return self.first.desired_state

    @property
    def live_state(self) -> str | None:
        return self.first.live_state

    @property
    def fields(self) -> tuple[FieldDiff, ...]:
        return self.first.fields

    @property
    def remark(self) -> str:
        return self.first.remark

    @property
    def count(self) -> int:
        return sum(f.count for f in self.findings)

    @property
    def since(self) -> datetime | None:
        """When the longest-standing of them was first seen."""
        return min((f.since for f in self.findings if f.since is not None), default=None)


def _foldable(f: Finding) -> bool:
    return shlex.quote(f.entry) == f.entry and bool(_LEAF.fullmatch(_leaf(f.entry)))


def _leaf(entry: str) -> str:
    return entry.rpartition("/")[2]


def _shape(text: str, entry: str) -> str:
    return _DURATION.sub(_SLOT, generic(text, entry))


def _key(f: Finding) -> object:
    fields = tuple((d.path, dumps_compact(d.desired), dumps_compact(d.live)) for d in f.fields)
    return (f.category, f.kind, f.provider, f.desired_state, f.live_state, f.fix is None,
            fields, *(_shape(t, f.entry) for t in (f.reason, f.fix or "", f.step, f.remark)))


def fold(findings: Iterable[Finding]) -> tuple[Fold, ...]:
    """The findings as folds, in the order of each fold's first finding."""
    groups: dict[object, list[Finding]] = {}
    for f in findings:
        groups.setdefault(_key(f) if _foldable(f) else id(f), []).append(f)
    return tuple(_folded(alike) for alike in groups.values())


def _folded(alike: Sequence[Finding]) -> Fold:
    first = alike[0]
    if len(alike) == 1:
        return Fold((first,), first.entry, first.reason, first.fix, first.step)
    entries = [f.entry for f in alike]
    fill = _Fill(first.entry, fold_subjects(entries), compress(_leaf(e) for e in entries),
                 " ".join(f"--target {shlex.quote(g)}" for g in target_globs(entries)))
    ranges = iter(_ranges([f.reason for f in alike]))
    reason = _DURATION.sub(lambda said: next(ranges, said.group()), fill(first.reason))
    return Fold(tuple(alike), fill.subjects, reason,
                None if first.fix is None else fill(first.fix), fill(first.step))


@dataclass(frozen=True, slots=True)
class _Fill:
    """A text of the first finding said for all: its entry and name replaced."""

    entry: str
    subjects: str  # the entries, folded
    names: str  # their last parts, as one hostlist
    targets: str  # --target options that select exactly them

    def __call__(self, text: str) -> str:
        text = generic(text, self.entry).replace("--target <subject>", self.targets)
        return text.replace("<subject>", self.subjects).replace("<name>", self.names)


def _ranges(reasons: Sequence[str]) -> tuple[str, ...]:
    """Each duration of the reasons (alike, so the same number in each) as the range of its
    values: ``2 d 3 h`` when all say it, else ``2 d 3 h to 2 d 5 h``."""
    columns = zip(*(_DURATION.findall(r) for r in reasons), strict=True)
    out = []
    for said in columns:
        seconds = sorted({duration_seconds(s) for s in said})
        out.append(said[0] if len(seconds) == 1 else
                   f"{duration_text(seconds[0])} to {duration_text(seconds[-1])}")
    return tuple(out)


def target_globs(ids: Iterable[str]) -> list[str]:
    """fnmatch globs (``xce-plan --target``) that match exactly ``ids`` among all ids:
    numbered ids as digit ranges of their width (``host/cn000[1-9]``,
    ``host/cn001[0-7]``), the others written out."""
    runs: dict[tuple[str, int], list[int]] = {}
    globs: list[str] = []
    for i in sorted(set(ids)):
        m = _NUMBERED.fullmatch(i)
        if m is None:
            globs.append(_escaped(i))
        else:
            runs.setdefault((m[1], len(m[2])), []).append(int(m[2]))
    for (head, width), numbers in sorted(runs.items()):
        for lo, hi in _runs(numbers):
            globs += [_escaped(head) + p for p in _span(f"{lo:0{width}d}", f"{hi:0{width}d}")]
    return globs


def _escaped(text: str) -> str:
    return _GLOB_MAGIC.sub(r"[\1]", text)


def _runs(numbers: list[int]) -> list[tuple[int, int]]:
    """Sorted numbers as runs of consecutive ones, (first, last) each."""
    out: list[tuple[int, int]] = []
    for n in sorted(numbers):
        if out and n == out[-1][1] + 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out


def _span(lo: str, hi: str) -> list[str]:
    """Globs matching exactly the digit strings from ``lo`` to ``hi`` (of one width)."""
    if lo == hi:
        return [lo]
    if lo[0] == hi[0]:
        return [lo[0] + p for p in _span(lo[1:], hi[1:])]
    rest = len(lo) - 1
    first, last = int(lo[0]), int(hi[0])
    head: list[str] = []
    tail: list[str] = []
    if lo[1:] != "0" * rest:
        head = [lo[0] + p for p in _span(lo[1:], "9" * rest)]
        first += 1
    if hi[1:] != "9" * rest:
        tail = [hi[0] + p for p in _span("0" * rest, hi[1:])]
        last -= 1
    middle = [] if first > last else [
        (str(first) if first == last else f"[{first}-{last}]") + "[0-9]" * rest]
    return head + middle + tail
