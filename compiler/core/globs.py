"""The one glob matcher: id and name globs (fnmatch syntax) compiled once, so the planner's
protected entries, a plan's targets and the drift folds all match the same way; and the one
check of a glob an admin wrote (``glob_problem``), so a rule that can never match what was
meant is refused where it is written."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Collection

from compiler.core.names import invisible_reason

MAX_GLOB = 1000  # characters; entry ids of nested kinds are long, a glob need not be longer


def glob_matcher(globs: Collection[str]) -> re.Pattern[str] | None:
    """One compiled regex for a set of fnmatch globs, so matching stays O(1) per id."""
    if not globs:
        return None
    return re.compile("|".join(fnmatch.translate(g) for g in sorted(globs)))


def glob_problem(text: str) -> str | None:
    """Why ``text`` is no glob a rule can use (None: it is one). fnmatch itself takes a
    lone '[' as a character, which is never what an admin meant."""
    if not text.strip():
        return "it is blank"
    if len(text) > MAX_GLOB:
        return f"it has {len(text)} characters; at most {MAX_GLOB}"
    if not text.isprintable():
        return invisible_reason(text) or "it contains a control character"
    for part in re.split(r"(\[[^\[\]]*\])", text):
        if part.startswith("[") and part.endswith("]") and len(part) > 1:
            body = part[1:-1].removeprefix("!")
            if not body:
                return f"the set {part!r} holds no character"
            if any(a > b for a, b in re.findall(r"(.)-(.)", body)):
                return f"the set {part!r} has a range that runs backwards"
        elif "[" in part or "]" in part:
            return f"{'[' if '[' in part else ']'} without its partner (a set is [abc] or [!abc])"
    return None
