"""Slurm hostlist expressions, expanded and folded by ClusterShell's ``NodeSet``.

ClusterShell is the maintained HPC node-set library; its syntax overlaps Slurm's but its
padding rule is stricter and it refuses adjacent brackets (``cn[22,130][1-2]``). This
wrapper parses an expression by the compiler's grammar (docs/language.md, "Hostlists"),
so errors say where and why, and hands ClusterShell an equivalent expression: each range
rewritten to Slurm's padding rule (the width is the low bound's digit count: ``[01-3]`` is
01..03, ``[001-1000]`` ends at 1000), and adjacent brackets joined into one, as Slurm
joins them (``cn[22,130][1-2]`` is cn221 cn222 cn1301 cn1302). ClusterShell then does the
Cartesian product of brackets with text between them, and the folding.

A hostlist is a set: the order written and repeats do not change it. Repeats are counted
(``Hostlist.written``) without expanding, so a caller can warn about them.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ClusterShell.NodeSet import NodeSet, NodeSetBase, NodeSetException
from ClusterShell.RangeSet import RangeSet

from compiler.core.names import MAX_NAME_BYTES

MAX_RANGE = 65_536  # as Slurm: "Too many hosts in range" past it
# Bracket groups multiply (``a[1-60000]b[1-60000]`` is 3.6 billion names): a bound on the
# whole expression keeps a typo from exhausting memory. Ten times the largest site we plan for.
MAX_HOSTS = 1_048_576
# Slurm reads a bound with strtoul: past 2^64 - 1 it silently clamps, and a range ending at
# 2^64 - 1 names nothing. Bounds stay within what every reader takes exactly.
MAX_NUMBER = 2**63 - 1
_NAME_CHARS = re.compile(r"[A-Za-z0-9._-]+")  # names ClusterShell folds as hostlists do
_TERM = re.compile(r"[^,\[]+(?:\[[^\]]*\][^,\[]*)*")  # one term of a folded hostlist
FOLDED_TERMS = 12  # terms of a folded subject list shown before "… (N in all)"
_TEXT_RUNS = re.compile(r"[0-9]+|[A-Za-z._-]+")
_RANGE = re.compile(r"([0-9]+)(?:-([0-9]+))?")
# A name ClusterShell reads as one pattern ``<prefix>%s`` and one index kept as written.
_SIMPLE_NAME = re.compile(r"([A-Za-z][A-Za-z._-]*)(\d{1,30})")


class HostlistError(ValueError):
    """An invalid expression; ``offset`` is the 0-based character where the trouble is."""

    def __init__(self, message: str, offset: int, reason: str = "syntax") -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.reason = reason  # "syntax", "descending" or "too-large"


@dataclass(frozen=True, slots=True)
class _Range:
    """``lo``..``hi``, each number zero-padded to ``width`` digits (wider numbers as they are)."""

    lo: int
    hi: int
    width: int

    @property
    def size(self) -> int:
        return self.hi - self.lo + 1

    def runs(self) -> Iterator[_Range]:
        """Sub-ranges whose numbers all print with one length (``[8-11]``: 8-9, 10-11)."""
        lo, width = self.lo, self.width
        while lo <= self.hi:
            top = min(self.hi, 10**width - 1)
            if lo <= top:
                yield _Range(lo, top, width)
                lo = top + 1
            width += 1

    def strings(self) -> Iterator[str]:
        return (str(n).zfill(self.width) for n in range(self.lo, self.hi + 1))


# One bracket: its ranges in the order written (repeats kept, for counting).
_Bracket = tuple[_Range, ...]
_Segment = str | _Bracket


def _count(bracket: _Bracket) -> int:
    return sum(r.size for r in bracket)


def _join(left: _Bracket, right: _Bracket) -> _Bracket:
    """Two adjacent brackets as one: each name of ``left`` followed by each of ``right``.
    A left number and a right run of one print length make one range: "22" + [1-2] is
    [221-222], "01" + [0-1] is [010-011]."""
    runs = [run for r in right for run in r.runs()]
    joined: list[_Range] = []
    for r in left:
        for text in r.strings():
            for run in runs:
                base = int(text) * 10**run.width
                joined.append(_Range(base + run.lo, base + run.hi, len(text) + run.width))
    return tuple(joined)


def _split_top(expr: str) -> list[tuple[int, str]]:
    """Top-level comma-separated terms with their offsets (commas inside brackets stay)."""
    terms: list[tuple[int, str]] = []
    depth, start = 0, 0
    for i, ch in enumerate(expr):
        if ch == "[":
            if depth:
                raise HostlistError("nested '[' is not allowed", i)
            depth = 1
        elif ch == "]":
            if not depth:
                raise HostlistError("']' without a matching '['", i)
            depth = 0
        elif ch == "," and not depth:
            terms.append((start, expr[start:i]))
            start = i + 1
    if depth:
        raise HostlistError("missing ']'", len(expr))
    terms.append((start, expr[start:]))
    return terms


def _parse_range(part: str, pos: int) -> _Range:
    m = _RANGE.fullmatch(part)
    if not m:
        space = next((i for i, ch in enumerate(part) if ch.isspace()), None)
        if space is not None:
            raise _bad_character(part[space], pos + space)
        raise HostlistError(f"{part!r} is not a number or a range lo-hi", pos)
    lo_s, hi_s = m.group(1), m.group(2) or m.group(1)
    lo, hi = int(lo_s), int(hi_s)
    if hi > MAX_NUMBER:
        raise HostlistError(f"{hi_s} is too large: at most {MAX_NUMBER} (2^63 - 1)", pos)
    if lo > hi:
        raise HostlistError(f"range '{part}' goes down: {lo} > {hi}", pos, "descending")
    if hi - lo + 1 > MAX_RANGE:
        raise HostlistError(
            f"range '{part}' has {hi - lo + 1} hosts; at most {MAX_RANGE} per range",
            pos,
            "too-large",
        )
    return _Range(lo, hi, len(lo_s))


def _parse_bracket(body: str, offset: int) -> _Bracket:
    if not body:
        raise HostlistError("empty brackets '[]'", offset)
    ranges: list[_Range] = []
    pos = offset
    for part in body.split(","):
        ranges.append(_parse_range(part, pos))
        pos += len(part) + 1
    return tuple(ranges)


def _bad_character(ch: str, offset: int) -> HostlistError:
    if ch.isspace():
        return HostlistError(
            "white space is not allowed: separate host names with ',' only", offset
        )
    return HostlistError(
        f"character {ch!r} is not allowed in a host name (letters, digits, '.', '_', '-')",
        offset,
    )


def _raw_segments(term: str, offset: int) -> list[_Segment]:
    """A term as runs of digits, of other name characters, and brackets, as written."""
    if not term:
        raise HostlistError("empty host name (two commas in a row, or a trailing comma)", offset)
    out: list[_Segment] = []
    i = 0
    before: tuple[int, _Bracket] | None = None  # the bracket before, and where it is
    while i < len(term):
        if term[i] == "[":
            if before is not None:
                _not_before_another(*before)
            end = term.index("]", i)
            before = (offset + i, _parse_bracket(term[i + 1 : end], offset + i + 1))
            out.append(before[1])
            i = end + 1
            continue
        m = _NAME_CHARS.match(term, i)
        if m is None:
            raise _bad_character(term[i], offset + i)
        out.extend(_TEXT_RUNS.findall(m.group()))
        i = m.end()
    return out


def _not_before_another(offset: int, bracket: _Bracket) -> None:
    """Slurm refuses a bracket of more than MAX_RANGE values (repeats counted) that another
    bracket follows, adjacent or not (``a[1-40000,40001-65537][1]``); only the last may
    hold more, each of its ranges at most MAX_RANGE."""
    if _count(bracket) > MAX_RANGE:
        raise HostlistError(
            f"a bracket of {_count(bracket):,} values (repeats counted) before another "
            f"bracket; Slurm reads at most {MAX_RANGE:,} there",
            offset,
            "too-large",
        )


def _segments(term: str, offset: int) -> list[_Segment]:
    """A term as text and brackets, alternating: adjacent brackets joined into one, as Slurm
    joins them, and digits right beside a bracket joined into it ("0[1-2]" is "[01-02]",
    as ClusterShell would read it: the names are the same)."""
    raw = _raw_segments(term, offset)
    for k, seg in enumerate(raw):
        beside = raw[k - 1 : k] + raw[k + 1 : k + 2]
        if isinstance(seg, str) and seg.isdigit() and any(isinstance(b, tuple) for b in beside):
            raw[k] = (_Range(int(seg), int(seg), len(seg)),)
    out: list[_Segment] = []
    for seg in raw:
        last = out[-1] if out else None
        if isinstance(seg, str) and isinstance(last, str):
            out[-1] = last + seg
        elif isinstance(seg, tuple) and isinstance(last, tuple):
            if _count(last) * _count(seg) > MAX_HOSTS:
                raise _too_many(_count(last) * _count(seg), offset)
            out[-1] = _join(last, seg)
        else:
            out.append(seg)
    return out


def _too_many(n: int, offset: int) -> HostlistError:
    return HostlistError(
        f"it names {n:,} hosts; at most {MAX_HOSTS:,} in one hostlist", offset, "too-large"
    )


def _clustershell(bracket: _Bracket) -> str:
    """A bracket in ClusterShell's terms: one padding width per range."""
    parts: list[str] = []
    for r in bracket:
        for run in r.runs():
            lo, hi = str(run.lo).zfill(run.width), str(run.hi).zfill(run.width)
            parts.append(lo if run.lo == run.hi else f"{lo}-{hi}")
    return "[" + ",".join(parts) + "]"


@dataclass(frozen=True, slots=True)
class _Term:
    """One comma-separated term: text and brackets alternating, each bracket one factor."""

    segments: tuple[_Segment, ...]

    @property
    def written(self) -> int:
        return math.prod(_count(s) for s in self.segments if not isinstance(s, str))

    @property
    def longest(self) -> int:
        """The longest host name it makes, in characters (ASCII: characters are bytes)."""
        return sum(
            len(s) if isinstance(s, str) else max(len(str(r.hi).zfill(r.width)) for r in s)
            for s in self.segments
        )

    def clustershell(self) -> str:
        return "".join(s if isinstance(s, str) else _clustershell(s) for s in self.segments)

    def names(self) -> Iterator[str]:
        """Every name as written, repeats included (for finding them, not for expanding)."""
        choices = [
            [s] if isinstance(s, str) else [t for r in s for t in r.strings()]
            for s in self.segments
        ]
        return ("".join(parts) for parts in itertools.product(*choices))


def _parse_terms(expr: str) -> list[_Term]:
    if not isinstance(expr, str) or not expr.strip():
        raise HostlistError("empty hostlist", 0)
    if expr != expr.strip():
        raise HostlistError("leading or trailing white space", 0)
    terms = []
    for offset, text in _split_top(expr):
        term = _Term(tuple(_segments(text, offset)))
        if term.longest > MAX_NAME_BYTES:
            raise HostlistError(
                f"it makes host names of {term.longest} characters; a name has at most "
                f"{MAX_NAME_BYTES}",
                offset,
            )
        terms.append(term)
    return terms


@dataclass(frozen=True, slots=True)
class Hostlist:
    """A parsed expression: its set of hosts, and how many names it writes (repeats counted)."""

    nodes: NodeSet
    written: int
    terms: tuple[_Term, ...]

    def repeated(self) -> list[str]:
        """The names written more than once (``cn[01-04],cn03``: cn03), sorted."""
        if self.written == len(self.nodes):
            return []
        seen = Counter(n for t in self.terms for n in t.names())
        return sorted(n for n, k in seen.items() if k > 1)


def parse(expr: str) -> Hostlist:
    """Parse and count; raises HostlistError with an offset. Counted before anything is
    expanded, so a typo that multiplies to billions fails fast."""
    terms = _parse_terms(expr)
    written = sum(t.written for t in terms)
    if written > MAX_HOSTS:
        raise _too_many(written, 0)
    try:
        nodes = NodeSet(",".join(t.clustershell() for t in terms))
    except NodeSetException as err:  # pragma: no cover - the grammar admits only what it reads
        raise HostlistError(f"invalid hostlist: {err}", 0) from err
    return Hostlist(nodes, written, tuple(terms))


def nodeset(expr: str) -> NodeSet:
    return parse(expr).nodes


def expand(expr: str) -> list[str]:
    """All host names of an expression, once each, in ClusterShell's sorted order."""
    return list(nodeset(expr))


def compress(names: Iterable[str]) -> str:
    """The folded expression of a set of names (the inverse of ``expand``).

    ``NodeSet.fromlist`` parses every name on its own (about 20 µs each, seconds for a
    100,000-host site). Names of the common form letters + digits go straight into one
    ``RangeSet`` per prefix — the very (pattern, index strings) that parsing would give —
    and only the others are parsed, so the folded text is the same.
    """
    indexes: dict[str, list[str]] = {}
    others: list[str] = []
    for name in names:
        m = _SIMPLE_NAME.fullmatch(name)
        if m is None:
            others.append(name)
        else:
            indexes.setdefault(m[1], []).append(m[2])
    folded = NodeSet.fromlist(others)
    for prefix, digits in indexes.items():
        rangeset = RangeSet()
        rangeset.update(digits)
        folded.update(NodeSetBase(prefix + "%s", rangeset, copy_rangeset=False))
    return str(folded)


def fold_subjects(subjects: Iterable[str], limit: int = FOLDED_TERMS) -> str:
    """Entry ids or names, compactly: ids that share all but their last part are written
    once, their last parts folded as hostlists are (``host/cn[0001-0064]``) or listed in
    braces (``volume-dir/shared/{alice,bob}``); past ``limit`` terms, the count in all."""
    groups: dict[str, list[str]] = {}
    for subject in dict.fromkeys(subjects):
        head, slash, leaf = subject.rpartition("/")
        groups.setdefault(head + slash, []).append(leaf)
    shown: list[str] = []
    room = limit
    for prefix, leaves in groups.items():
        foldable = [leaf for leaf in leaves if _NAME_CHARS.fullmatch(leaf)]
        folded = [*(_TERM.findall(compress(foldable)) if foldable else []),
                  *sorted(leaf for leaf in leaves if not _NAME_CHARS.fullmatch(leaf))]
        terms, room = folded[:max(room, 0)], room - len(folded)
        if prefix and len(terms) > 1:
            shown.append(f"{prefix}{{{','.join(terms)}}}")
        else:
            shown.extend(prefix + term for term in terms)
    total = sum(len(leaves) for leaves in groups.values())
    return ", ".join(shown) + (f" … ({total} in all)" if room < 0 else "")
