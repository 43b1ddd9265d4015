"""How much of a text any view shows: ids, values, reasons and messages are cut to a limit,
keeping their start and end, so that no output grows with what a provider sent."""

from __future__ import annotations

# Longest value shown whole: a live id or value may be huge (a provider's bug or a hostile
# inventory), and a plan must stay readable and small. The plan JSON and file keep it all.
DISPLAY_LIMIT = 200
TEXT_LIMIT = 1000  # reasons and messages: they name ids and carry a provider's words


def shorten(text: str, limit: int = DISPLAY_LIMIT) -> str:
    """``text`` if short enough, else its start and end around how much was left out."""
    if len(text) <= limit:
        return text
    head, tail = text[: limit * 3 // 4], text[-(limit // 8):]
    return f"{head}…[{len(text) - len(head) - len(tail)} more characters]…{tail}"
