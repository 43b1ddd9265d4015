"""Names that become paths or ids, and "did you mean" suggestions."""

from __future__ import annotations

import difflib
import heapq
import re
import unicodedata
from collections.abc import Iterable

from compiler.core.textstyle import printable

# The longest name, in UTF-8 bytes: a path component (NAME_MAX on Linux filesystems), a
# user or group name, one part of an entry id. Live entries are held to it too.
MAX_NAME_BYTES = 255

# A topology key, as the provider protocol, the live map and site-config all read it: a
# name, optionally under a domain (``rack``, ``block``, ``site.example/pod``), ending in a
# letter or digit.
TOPOLOGY_KEY = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._/-]*[A-Za-z0-9])?")
# The name of a role, guardrail, waiver or catalog opcode in policies/ and the site's
# ``policy:`` section: lowercase words joined by '-'.
POLICY_NAME_RE = re.compile(r"^[a-z][a-z0-9-]*$")


def invisible_reason(name: str) -> str | None:
    """Why ``name`` shows other than it is, or None: an invisible format character (Unicode
    category Cf: U+202E turns the text around it, U+200B and U+FEFF show as nothing) or a
    lone surrogate (not text at all; it cannot even be written as UTF-8)."""
    if name.isascii():
        return None
    for ch in name:
        category = unicodedata.category(ch)
        if category == "Cf":
            what = unicodedata.name(ch, "a format character")
            return f"it contains the invisible character U+{ord(ch):04X} ({what})"
        if category == "Cs":
            return f"it contains U+{ord(ch):04X}, a lone surrogate, which is not text"
    return None


def too_long_reason(name: str) -> str | None:
    """Why ``name`` is too long to be a name, or None (bytes of UTF-8, as filesystems count)."""
    if len(name) * 4 <= MAX_NAME_BYTES:  # the usual case, without encoding
        return None
    size = len(name.encode("utf-8", "surrogatepass"))
    if size <= MAX_NAME_BYTES:
        return None
    return f"it is {size} bytes long in UTF-8; a name has at most {MAX_NAME_BYTES}"


def shown(name: str) -> str:
    """A name as messages show it: quoted, escaped (no control or invisible character reaches
    the terminal), and shortened when long."""
    return repr(name) if len(name) <= 60 else repr(name[:40]) + f"… ({len(name)} characters)"


def visible(text: str) -> str:
    """``text`` as a message quotes it: each character that does not print (control, format,
    surrogate) escaped, and shortened when long."""
    if len(text) > 60:
        text = text[:40] + f"… ({len(text)} characters)"
    return printable(text)


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
    return invisible_reason(name) or too_long_reason(name)


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
