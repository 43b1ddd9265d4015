"""One convention for every ``--format``: a table from a format's name to its renderer.

Problems, plans, apply reports and policy reviews each define one ``Formats``; its
``render`` picks the renderer, so an unknown format is the same UserError everywhere, and
its ``names`` are what the command line offers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from compiler.core import codes
from compiler.core.problems import Problem, UserError
from compiler.core.textstyle import Style

T = TypeVar("T")


class Formats(Generic[T]):
    """The renderings of one kind of output: ``text`` for terminals gets the stream's style
    (colour on a TTY); the others (json, markdown, github …) are the same on any stream."""

    def __init__(self, what: str, text: Callable[[T, Style | None], str],
                 **plain: Callable[[T], str]) -> None:
        self.what = what
        self._text = text
        self._plain = plain
        self.names = ("text", *plain)

    def render(self, thing: T, fmt: str, style: Style | None = None) -> str:
        """``thing`` in format ``fmt``; an unknown format is a usage error (XCE007)."""
        if fmt == "text":
            return self._text(thing, style)
        renderer = self._plain.get(fmt)
        if renderer is None:
            raise UserError([Problem(
                codes.USAGE, f"unknown {self.what} format {fmt!r}",
                f"use one of: {', '.join(self.names)}", subject=self.what)])
        return renderer(thing)
