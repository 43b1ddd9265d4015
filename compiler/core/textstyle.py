"""Terminal styling: colour only when writing to a TTY and NO_COLOR is unset; and text that
reaches a terminal only as characters that print."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TextIO


def wants_color(stream: TextIO | None = None) -> bool:
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return hasattr(stream, "isatty") and stream.isatty()


@dataclass(frozen=True, slots=True)
class Style:
    color: bool

    @classmethod
    def for_stream(cls, stream: TextIO | None = None) -> Style:
        return cls(wants_color(stream))

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def red(self, text: str) -> str:
        return self._wrap("31", text)

    def green(self, text: str) -> str:
        return self._wrap("32", text)

    def yellow(self, text: str) -> str:
        return self._wrap("33", text)

    def bold(self, text: str) -> str:
        return self._wrap("1", text)


def printable(text: str) -> str:
    """``text`` with each character that does not print written as ``\\uXXXX``: a line
    break, a tab, a terminal escape (``\\x1b[31m``), a format character, a lone surrogate.
    A path or name in a message, whatever bytes it holds, shows as what it is and stays on
    its line; a renderer that escapes its own way (GitHub's workflow commands, JSON) keeps
    the text as it is."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)


def md_cell(text: str) -> str:
    """One markdown table cell: a line break is a space, other characters that do not print
    escaped (``printable``), a pipe escaped, so the cell stays one cell on one line."""
    return printable(text.replace("\n", " ")).replace("|", "\\|")
