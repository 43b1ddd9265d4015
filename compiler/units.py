"""Sizes and durations as admins write them (``500GiB``, ``2 TB``, ``14d``, ``1h30m``).

Sizes become bytes and durations seconds, the base units of the supply map.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

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

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")
_DURATION_PART = re.compile(r"(\d+)\s*([a-zA-Z]+)")
_DURATION_RE = re.compile(r"^\s*(?:\d+\s*[a-zA-Z]+\s*)+$")


class UnitError(ValueError):
    """A value with a missing or unknown unit; the message says what would be accepted."""


def _bounded(value: object, amount: int) -> int:
    if amount > MAX_AMOUNT:
        raise UnitError(f"'{value}' is too large: at most {MAX_AMOUNT} (2^63 - 1)")
    return amount


def parse_size(value: object) -> int:
    """Bytes from an int (bytes) or a string with a unit; fractions must land on whole bytes."""
    if isinstance(value, bool):
        raise UnitError("expected a size such as 500GiB or 2TB, got a boolean")
    if isinstance(value, int):
        if value < 0:
            raise UnitError("a size cannot be negative")
        return _bounded(value, value)
    if not isinstance(value, str):
        raise UnitError(f"expected a size such as 500GiB or 2TB, got {type(value).__name__}")
    m = _SIZE_RE.match(value)
    if not m:
        raise UnitError(f"'{value}' is not a size; write a number and a unit, e.g. 500GiB or 2TB")
    number, unit = m.groups()
    unit = unit or "B"
    if unit not in SIZE_UNITS:
        near = next((u for u in SIZE_UNITS if u.lower() == unit.lower()), None)
        hint = f" (did you mean {near}?)" if near else ""
        units = ", ".join(SIZE_UNITS)
        raise UnitError(f"unknown size unit '{unit}'{hint}; use one of {units}")
    try:
        amount = Decimal(number) * SIZE_UNITS[unit]
    except InvalidOperation as err:  # pragma: no cover - the regex admits only digits
        raise UnitError(f"'{value}' is not a size") from err
    if amount != amount.to_integral_value():
        raise UnitError(f"'{value}' is not a whole number of bytes")
    return _bounded(value, int(amount))


def parse_duration(value: object) -> int:
    """Seconds from an int (seconds) or a string like ``30m``, ``14d`` or ``1h30m``."""
    if isinstance(value, bool):
        raise UnitError("expected a duration such as 30m or 14d, got a boolean")
    if isinstance(value, int):
        if value < 0:
            raise UnitError("a duration cannot be negative")
        return _bounded(value, value)
    if not isinstance(value, str):
        raise UnitError(f"expected a duration such as 30m or 14d, got {type(value).__name__}")
    if not _DURATION_RE.match(value):
        raise UnitError(f"'{value}' is not a duration; write e.g. 90s, 30m, 12h, 14d or 1h30m")
    total = 0
    for number, unit in _DURATION_PART.findall(value):
        if unit not in DURATION_UNITS:
            raise UnitError(f"unknown duration unit '{unit}'; use s, m, h or d (e.g. 30m, 14d)")
        total += int(number) * DURATION_UNITS[unit]
    return _bounded(value, total)


def format_size(n: int) -> str:
    """The largest binary unit that divides evenly, for messages."""
    for unit in ("PiB", "TiB", "GiB", "MiB", "KiB"):
        if n and n % SIZE_UNITS[unit] == 0:
            return f"{n // SIZE_UNITS[unit]}{unit}"
    for unit in ("PiB", "TiB", "GiB", "MiB", "KiB"):
        if n >= SIZE_UNITS[unit]:
            return f"{n / SIZE_UNITS[unit]:.1f}{unit}"
    return f"{n}B"
