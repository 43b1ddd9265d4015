"""Sizes and durations as admins write them (``500GiB``, ``2 TB``, ``14d``, ``1h30m``).

Sizes become bytes and durations seconds, the base units of the supply map. What is
accepted is one pattern per type (``SIZE_PATTERN``, ``DURATION_PATTERN``), which the JSON
Schema uses too; a value that does not match is taken apart to say why (an unknown unit
with the nearest one, white space, a sign, a fraction), by ``_why``. Sizes and durations
are written back for people by ``format_size`` and ``duration_text`` (instants and dates are
``compiler.core.times``).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Literal

SIZE_UNITS: dict[str, int] = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "PB": 10**15,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "TiB": 2**40,
    "PiB": 2**50,
}
DURATION_UNITS: dict[str, int] = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# The largest amount a map carries: a signed 64-bit integer, what JSON tools and SQLite
# read exactly (about 8 EiB, or 292 billion years in seconds).
MAX_AMOUNT = 2**63 - 1

_SIZE_ALT = "|".join(SIZE_UNITS)
# ASCII digits (a regex's \d would take any script's), one optional space before a unit.
SIZE_PATTERN = rf"^[0-9]+(\.[0-9]+)?( ?({_SIZE_ALT}))?$"
_PART = r"[0-9]+ ?[smhd]"
DURATION_PATTERN = rf"^{_PART}( ?{_PART})*$"
_SIZE_RE = re.compile(r"([0-9]+(?:\.[0-9]+)?) ?([A-Za-z]*)")
_DURATION_PART = re.compile(r"([0-9]+) ?([smhd])")
_SIZES_OK = re.compile(SIZE_PATTERN)
_DURATIONS_OK = re.compile(DURATION_PATTERN)

SIZE_HINT = (
    "write bytes, or a number and a unit: B, KB, MB, GB, TB, PB (powers of 10) or KiB, MiB, "
    "GiB, TiB, PiB (powers of 2), e.g. 500GiB or 1.5TB"
)
DURATION_HINT = (
    "write seconds, or whole numbers with the units s, m, h, d, e.g. 90s, 30m, 12h, 14d or 1h30m"
)
# What admins write for a unit, and what the message then says.
_SIZE_WORDS = {
    **{word: f"did you mean {unit}?" for word, unit in {
        "bytes": "B", "byte": "B", "k": "KB or KiB", "m": "MB or MiB", "g": "GB or GiB",
        "t": "TB or TiB", "p": "PB or PiB", "kilobytes": "KB", "megabytes": "MB",
        "gigabytes": "GB", "terabytes": "TB", "petabytes": "PB", "kibibytes": "KiB",
        "mebibytes": "MiB", "gibibytes": "GiB", "tebibytes": "TiB", "pebibytes": "PiB",
    }.items()},
    "eb": "the largest size is 8191PiB", "eib": "the largest size is 8191PiB",
}  # fmt: skip
_DURATION_WORDS = {
    **{word: f"did you mean {unit}?" for word, unit in {
        "sec": "s", "secs": "s", "second": "s", "seconds": "s", "min": "m", "mins": "m",
        "minute": "m", "minutes": "m", "hr": "h", "hrs": "h", "hour": "h", "hours": "h",
        "day": "d", "days": "d",
    }.items()},
    **dict.fromkeys(("w", "week", "weeks"), "write days: a week is 7d"),
}  # fmt: skip
# A scan of a value that did not match: numbers, words, runs of white space, anything else.
_TOKEN = re.compile(r"(?P<num>[0-9]+(?:\.[0-9]+)?)|(?P<word>[A-Za-z]+)|(?P<space>\s+)|(?P<other>.)")


_TYPE_NAMES: dict[type, str] = {
    type(None): "nothing (an empty value)",
    list: "a list",
    dict: "a mapping",
}


class UnitError(ValueError):
    """A value that is not a size or a duration; the message names it and says why."""


def _shown(value: object) -> str:
    return repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."


def _unit_hint(unit: str, units: dict[str, int], words: dict[str, str]) -> str:
    near = next((u for u in units if u.lower() == unit.lower()), None)
    hint = f"did you mean {near}?" if near else words.get(unit.lower())
    return f" — {hint}" if hint else ""


def _character_reason(token: str, i: int, before: str) -> str:
    """What a character that is neither digit, letter nor space does wrong."""
    if token in "-+" and i == 0:
        return "it is negative" if token == "-" else "it has a sign: write the number alone"
    if token == "," and before == "num":
        return "',' in a number: write a decimal point (1.5TiB) and no thousands separator"
    return f"the character {token!r} does not belong in it"


def _space_reason(token: str, before: str, after: str) -> str | None:
    if token != " ":
        return "white space other than one space (between a number and its unit)"
    if before == after == "num":
        return "a space inside a number: write its digits together"
    return None


def _word_reason(
    tokens: list[tuple[str, str]], i: int, units: dict[str, int], words: dict[str, str]
) -> str:
    """What is wrong with a word that is not a unit: a unit split by a space, or a misspelling."""
    token = tokens[i][1]
    if i + 2 < len(tokens) and token + tokens[i + 2][1] in units:
        return f"a space inside the unit {token + tokens[i + 2][1]!r}"
    return f"unknown unit {token!r}{_unit_hint(token, units, words)}"


def _token_reason(
    tokens: list[tuple[str, str]],
    i: int,
    units: dict[str, int],
    words: dict[str, str],
    duration: bool,
) -> str | None:
    """What is wrong with one token of a value that did not match, if anything."""
    kind, token = tokens[i]
    before = tokens[i - 1][0] if i else ""
    after = tokens[i + 1][0] if i + 1 < len(tokens) else ""
    if kind == "other":
        return _character_reason(token, i, before)
    if kind == "space":
        return _space_reason(token, before, after)
    if kind == "num" and duration and "." in token:
        return f"{token} is a fraction; a duration is whole numbers (1h30m, not 1.5h)"
    if kind == "word" and token not in units:
        return _word_reason(tokens, i, units, words)
    return None


def _order_reason(tokens: list[tuple[str, str]], duration: bool) -> str:
    """Why a value whose every piece is sound does not match: the order of its pieces."""
    pieces = [(kind, token) for kind, token in tokens if kind != "space"]
    for i, (kind, token) in enumerate(pieces):
        before = pieces[i - 1][0] if i else ""
        after = pieces[i + 1][0] if i + 1 < len(pieces) else ""
        if kind == "word" and before != "num":
            return f"the unit {token!r} has no number before it"
        if kind == "num" and duration and after != "word":
            return f"the number {token} has no unit (write {token}s for seconds)"
    return "a size is one number and at most one unit (500GiB, not 500GiB 12MiB)"


def _why(text: str, units: dict[str, int], words: dict[str, str], duration: bool) -> str:
    """Why ``text`` does not match its pattern: the first thing wrong, read left to right."""
    if text != text.strip():
        return "it has white space before or after it"
    tokens = [(m.lastgroup or "", m.group()) for m in _TOKEN.finditer(text)]
    if not tokens:
        return "it is empty"
    kind, first = tokens[0]
    if kind == "word" and first not in units:
        return "it does not start with a number"
    for i in range(len(tokens)):
        reason = _token_reason(tokens, i, units, words, duration)
        if reason:
            return reason
    return _order_reason(tokens, duration)


def _bounded(value: object, amount: int, what: str) -> int:
    if amount > MAX_AMOUNT:
        raise UnitError(f"{_shown(value)} is too large: at most {MAX_AMOUNT} {what} (2^63 - 1)")
    return amount


def _number(value: object, what: str, fraction: str) -> int:
    """An int as the base unit; anything else that is not a string is the wrong type."""
    if isinstance(value, bool):
        raise UnitError(f"expected {what}, got {value} (true/false)")
    if isinstance(value, float):
        raise UnitError(f"expected {what}, got the fraction {value}: {fraction}")
    if not isinstance(value, int):
        raise UnitError(f"expected {what}, got {_TYPE_NAMES.get(type(value), 'a value')}")
    if value < 0:
        raise UnitError(f"{value} is not {what}: it is negative")
    return value


def parse_size(value: object) -> int:
    """Bytes from an int (bytes) or a string with a unit; fractions must land on whole bytes."""
    if not isinstance(value, str):
        return _bounded(
            value, _number(value, "a size", "bytes are whole; write a unit (1.5GiB)"), "bytes"
        )
    if not _SIZES_OK.fullmatch(value):
        why = _why(value, SIZE_UNITS, _SIZE_WORDS, False)
        raise UnitError(f"{_shown(value)} is not a size: {why}")
    m = _SIZE_RE.fullmatch(value)
    assert m is not None  # the pattern matched
    number, unit = m.groups()
    amount = Decimal(number) * SIZE_UNITS[unit or "B"]
    if amount != amount.to_integral_value():
        raise UnitError(
            f"{_shown(value)} is not a size: it is not a whole number of bytes ({amount} B)"
        )
    return _bounded(value, int(amount), "bytes")


def parse_duration(value: object) -> int:
    """Seconds from an int (seconds) or a string like ``30m``, ``14d`` or ``1h30m``."""
    if not isinstance(value, str):
        return _bounded(
            value, _number(value, "a duration", "write whole seconds, or units (1h30m)"), "seconds"
        )
    if not _DURATIONS_OK.fullmatch(value):
        why = _why(value, DURATION_UNITS, _DURATION_WORDS, True)
        raise UnitError(f"{_shown(value)} is not a duration: {why}")
    total = sum(int(n) * DURATION_UNITS[u] for n, u in _DURATION_PART.findall(value))
    return _bounded(value, total, "seconds")


def format_size(n: int) -> str:
    """The largest binary unit that divides evenly, for messages."""
    for unit in ("PiB", "TiB", "GiB", "MiB", "KiB"):
        if n and n % SIZE_UNITS[unit] == 0:
            return f"{n // SIZE_UNITS[unit]}{unit}"
    for unit in ("PiB", "TiB", "GiB", "MiB", "KiB"):
        if n >= SIZE_UNITS[unit]:
            return f"{n / SIZE_UNITS[unit]:.1f}{unit}"
    return f"{n}B"


# The units a duration is written in for people: seconds, short name, name.
_SPANS = ((86400, "d", "day"), (3600, "h", "hour"), (60, "min", "minute"), (1, "s", "second"))
# What the short form writes, for a reader that takes its values back (a report that folds
# alike lines shows the range of their durations).
DURATION_TEXT_PATTERN = r"\b[0-9]+ (?:d|h|min|s)(?: [0-9]+ (?:h|min|s))?\b"
_TEXT_PART = re.compile(r"([0-9]+) (d|h|min|s)")
DurationForm = Literal["short", "words"]


def duration_text(seconds: float, form: DurationForm = "short") -> str:
    """A duration for people, in one of two forms.

    ``short``: its two largest units, ``2 d 3 h``, ``1 h 5 min``, ``45 s`` (whole seconds,
    rounded down; two adjacent units at most, so 1 d 0 h 5 min reads ``1 d``).
    ``words``: how long ago or how long to wait, as plans say it: ``3 days``, ``5 hours``,
    ``1 minute``, the largest unit that fits at least twice (once for minutes), so 30 hours
    read ``30 hours`` and not ``1 day``.
    """
    return _in_words(seconds) if form == "words" else _in_short_units(seconds)


def _in_short_units(seconds: float) -> str:
    rest = max(0, int(seconds))
    parts: list[str] = []
    for size, unit, _ in _SPANS:
        n, rest = divmod(rest, size)
        if n and len(parts) < 2:
            parts.append(f"{n} {unit}")
        elif parts:
            break
    return " ".join(parts) or "0 s"


def _in_words(seconds: float) -> str:
    for size, _, unit in _SPANS[:-1]:
        n = int(seconds // size)
        if n >= 2 or (n == 1 and size == 60):
            return f"{n} {unit}" + ("s" if n > 1 else "")
    return "less than a minute"


def duration_seconds(text: str) -> int:
    """The seconds of a short ``duration_text`` (its inverse, to the unit it shows)."""
    sizes = {unit: size for size, unit, _ in _SPANS}
    return sum(int(n) * sizes[unit] for n, unit in _TEXT_PART.findall(text))
