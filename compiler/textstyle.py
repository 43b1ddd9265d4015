"""Terminal styling: colour only when writing to a TTY and NO_COLOR is unset."""

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
