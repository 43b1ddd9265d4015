"""Slurm hostlist expressions, expanded and folded by ClusterShell's ``NodeSet``.

ClusterShell is the maintained HPC node-set library; its syntax is a superset of Slurm's
and its padding rule is stricter. This wrapper checks an expression against Slurm's
grammar first (so errors say where and why), rewrites each range to Slurm's padding rule
(the width is the low bound's digit count: ``[01-3]`` is 01..03, ``[001-1000]`` ends at
1000), and lets ClusterShell do the Cartesian product and the folding.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ClusterShell.NodeSet import NodeSet, NodeSetBase, NodeSetException
from ClusterShell.RangeSet import RangeSet

from compiler.names import MAX_NAME_BYTES

MAX_RANGE = 65_536
# Bracket groups multiply (``a[1-60000]b[1-60000]`` is 3.6 billion names): a bound on the
# whole expression keeps a typo from exhausting memory. Ten times the largest site we plan for.
MAX_HOSTS = 1_048_576
_NAME_CHARS = re.compile(r"[A-Za-z0-9._-]")
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
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
    lo: int
    hi: int
    width: int


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


def _parse_ranges(body: str, offset: int) -> list[_Range]:
    if not body:
        raise HostlistError("empty brackets '[]'", offset)
    ranges: list[_Range] = []
    pos = offset
    for part in body.split(","):
        m = _RANGE.match(part)
        if not m:
            raise HostlistError(f"'{part}' is not a number or a range lo-hi", pos)
        lo_s, hi_s = m.group(1), m.group(2) or m.group(1)
        lo, hi = int(lo_s), int(hi_s)
        if lo > hi:
            raise HostlistError(f"range '{part}' goes down: {lo} > {hi}", pos, "descending")
        if hi - lo + 1 > MAX_RANGE:
            raise HostlistError(
                f"range '{part}' has {hi - lo + 1} hosts; at most {MAX_RANGE} per range",
                pos,
                "too-large",
            )
        ranges.append(_Range(lo, hi, len(lo_s)))
        pos += len(part) + 1
    return ranges


def _clustershell_ranges(ranges: Iterable[_Range]) -> str:
    """Rewrite ranges to ClusterShell's rule: one padding width per range."""
    parts: list[str] = []
    for r in ranges:
        limit = 10**r.width - 1
        if r.lo <= limit:
            hi = min(r.hi, limit)
            lo_s, hi_s = str(r.lo).zfill(r.width), str(hi).zfill(r.width)
            parts.append(lo_s if r.lo == hi else f"{lo_s}-{hi_s}")
        if r.hi > limit:
            lo = max(r.lo, limit + 1)
            parts.append(str(lo) if lo == r.hi else f"{lo}-{r.hi}")
    return ",".join(parts)


def _normalise_term(term: str, offset: int) -> str:
    out: list[str] = []
    i = 0
    longest = 0  # the longest host name the term makes (ASCII: characters are bytes)
    if not term:
        raise HostlistError("empty host name (two commas in a row, or a trailing comma)", offset)
    while i < len(term):
        ch = term[i]
        if ch == "[":
            end = term.index("]", i)
            ranges = _parse_ranges(term[i + 1 : end], offset + i + 1)
            longest += max(max(r.width, len(str(r.hi))) for r in ranges)
            out.append("[" + _clustershell_ranges(ranges) + "]")
            i = end + 1
        elif _NAME_CHARS.match(ch):
            out.append(ch)
            longest += 1
            i += 1
        else:
            raise HostlistError(
                f"character {ch!r} is not allowed in a host name (letters, digits, '.', '_', '-')",
                offset + i,
            )
    if longest > MAX_NAME_BYTES:
        raise HostlistError(
            f"it makes host names of {longest} characters; a name has at most {MAX_NAME_BYTES}",
            offset,
        )
    return "".join(out)


def normalise(expr: str) -> str:
    """A ClusterShell expression with Slurm's meaning; raises HostlistError with an offset."""
    if not isinstance(expr, str) or not expr.strip():
        raise HostlistError("empty hostlist", 0)
    if expr != expr.strip():
        raise HostlistError("leading or trailing white space", 0)
    return ",".join(_normalise_term(t, off) for off, t in _split_top(expr))


def nodeset(expr: str) -> NodeSet:
    try:
        nodes = NodeSet(normalise(expr))
    except NodeSetException as err:  # pragma: no cover - normalise rejects what NodeSet would
        raise HostlistError(f"invalid hostlist: {err}", 0) from err
    if len(nodes) > MAX_HOSTS:  # counted without expanding
        raise HostlistError(
            f"it names {len(nodes):,} hosts; at most {MAX_HOSTS:,} in one hostlist", 0, "too-large"
        )
    return nodes


def expand(expr: str) -> list[str]:
    """All host names of an expression, in ClusterShell's sorted order."""
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
