"""Names that become paths or ids, and "did you mean" suggestions."""

from __future__ import annotations

import difflib
import heapq
from collections.abc import Iterable


def path_unsafe_reason(name: str) -> str | None:
    """Why ``name`` cannot be one path component on a shared filesystem (N12), or None."""
    if not name:
        return "it is empty"
    if "\x00" in name:
        return "it contains a NUL byte"
    if "/" in name:
        return "it contains '/'"
    if name in (".", ".."):
        return f"it is '{name}'"
    if ".." in name:
        return "it contains '..'"
    if name.startswith("-"):
        return "it starts with '-' (it would be read as a command-line option)"
    if name.startswith("."):
        return "it starts with '.' (a hidden name, and providers keep their own work there)"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "it contains a control character"
    if any(c.isspace() for c in name):
        return "it contains white space"
    return None


MAX_CANDIDATES = 2000


def _shared_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def nearest(word: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate, if any is close enough to be a likely typo.

    Among very many names (100,000 hosts) only those of about the same length and with the
    longest common prefix are compared, so an error stays cheap to report.
    """
    pool = list(candidates)
    if len(pool) > MAX_CANDIDATES:
        near = [c for c in pool if abs(len(c) - len(word)) <= 2]
        pool = heapq.nlargest(MAX_CANDIDATES, near, key=lambda c: _shared_prefix(c, word))
    found = difflib.get_close_matches(word, pool, n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """A hint fragment: ``did you mean 'x'?`` or an empty string."""
    match = nearest(word, candidates)
    return f"did you mean '{match}'?" if match else ""
