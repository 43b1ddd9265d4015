"""The sticky comment: its hidden marker, its body within the forge's limit, and the one
post that updates it (or makes it the first time).

The marker (``<!-- xce-gitops:NAME -->``) opens the body, so it is found again on the next
push while a reviewer quoting the comment (``> …``) never carries it. A body past the
forge's limit is cut at a line, its open code block and ``<details>`` closed, and a note
says so: the comment is posted still, with what fits.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from reconciler.pr.forge import Comment, Forge

DEFAULT_MARKER = "plan"
MARKER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_FENCE = re.compile(r"^ {0,3}(```|~~~)", re.MULTILINE)
_OPENS = re.compile(r"<details[\s>]", re.IGNORECASE)
_CLOSES = re.compile(r"</details\s*>", re.IGNORECASE)


def marker(name: str) -> str:
    return f"<!-- xce-gitops:{name} -->"


def carries(body: str, mark: str) -> bool:
    """Whether a comment is the sticky one of ``mark`` (another NAME's is not)."""
    return body.lstrip().startswith(mark)


@dataclass(frozen=True)
class Part:
    name: str  # the file's name as given, or "standard input"
    text: str


@dataclass(frozen=True)
class Body:
    text: str
    left_out: int  # characters cut at the forge's limit (0: all of it)


@dataclass(frozen=True)
class Posted:
    created: bool  # else updated
    comment: Comment
    pull: int


def assemble(parts: Sequence[Part], mark: str, limit: int, label: str) -> Body:
    """The marker, then the parts joined by a blank line; cut to ``limit`` characters."""
    whole = mark + "\n" + "\n\n".join(p.text.rstrip("\n") for p in parts) + "\n"
    if len(whole) <= limit:
        return Body(whole, 0)
    names = " and ".join(p.name for p in parts)
    room = limit - len(_note(label, limit, len(whole), names))
    while True:  # each round keeps less, until the closing markup and the note fit too
        kept = whole[:room]
        line_end = kept.rfind("\n", len(mark) + 1)
        kept = kept[:line_end + 1] if line_end > 0 else kept
        tail = _closers(kept) + _note(label, limit, len(whole) - len(kept), names)
        if len(kept) + len(tail) <= limit:
            return Body(kept + tail, len(whole) - len(kept))
        room -= len(kept) + len(tail) - limit


def post(forge: Forge, pull: int, body: Body, mark: str) -> Posted:
    """Update the comment carrying ``mark`` on ``pull``, or create it."""
    found = forge.find_comment(pull, mark)
    if found is None:
        return Posted(True, forge.create_comment(pull, body.text), pull)
    return Posted(False, forge.update_comment(pull, found, body.text), pull)


def _closers(kept: str) -> str:
    """What closes the code block and ``<details>`` left open where the body was cut."""
    out = "" if kept.endswith("\n") else "\n"
    if len(_FENCE.findall(kept)) % 2:
        out += "```\n"
    out += "</details>\n" * max(0, len(_OPENS.findall(kept)) - len(_CLOSES.findall(kept)))
    return out


def _note(label: str, limit: int, left_out: int, names: str) -> str:
    return (f"\n---\n\n**Cut:** this comment reached {label}'s limit of {limit:,} characters; "
            f"the last {left_out:,} were left out. The whole text is in {names} of the CI job "
            "that posted it.\n")
