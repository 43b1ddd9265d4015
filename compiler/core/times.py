"""Instants and dates: the one reading of ISO 8601 text, and the named forms every output
prints a time in.

A time is kept as seconds since the epoch or as an aware ``datetime`` in UTC. Each form
below is one that some output already shows (a plan, a JSON reply, a report, a file name),
so there is one definition of each instead of a format string at every caller; a new output
picks one of them. A time given without a zone is read as UTC, the zone of every output.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Literal

UtcForm = Literal["iso", "offset", "stamp", "minutes", "seconds"]
# The forms, e.g. for 2024-05-01 12:00:00 UTC:
_STRFTIME: dict[UtcForm, str] = {
    "iso": "%Y-%m-%dT%H:%M:%SZ",  # 2024-05-01T12:00:00Z: plans, replies and reports
    "stamp": "%Y%m%dT%H%M%SZ",  # 20240501T120000Z: inside names (run ids, .eml files)
    "minutes": "%Y-%m-%d %H:%M UTC",  # 2024-05-01 12:00 UTC: for people, in drift reports
    "seconds": "%Y-%m-%d %H:%M:%S UTC",  # 2024-05-01 12:00:00 UTC: for people, to the second
}
# "offset", 2024-05-01T12:00:00+00:00: Python's ISO form, which the drift ledger stores and
# xce-lock's JSON shows; not a strftime pattern (it writes years below 1000 with 4 digits).


class TimeError(ValueError):
    """An instant no output can print: before the year 1 or past the year 9999."""


def _utc(at: float | datetime) -> datetime:
    if isinstance(at, datetime):
        return at.astimezone(UTC) if at.tzinfo else at.replace(tzinfo=UTC)
    return datetime.fromtimestamp(at, UTC)


def format_utc(at: float | datetime, form: UtcForm = "iso") -> str:
    """An instant (seconds since the epoch, or a datetime) in one of the named forms, in UTC."""
    moment = _utc(at)
    if form == "offset":
        return moment.isoformat(timespec="seconds")
    return moment.strftime(_STRFTIME[form])


def format_date(day: date) -> str:
    """A date as policies write it and messages print it: ``2027-06-30``."""
    return day.isoformat()


def utc_instant(seconds: float) -> float:
    """``seconds`` if it is an instant ``format_utc`` prints (the years 1 to 9999, as UTC);
    else TimeError: a time given on a command line (``--as-of +99999999999999d``)."""
    try:
        format_utc(seconds)
    except (OverflowError, OSError, ValueError):
        raise TimeError("it is past the year 9999 (or before the year 1), which no plan "
                        "or report can print") from None
    return seconds


def parse_instant(text: str) -> datetime:
    """ISO 8601 text (``2024-05-01T12:00``, ``2024-05-01 12:00:00+02:00``) as an aware
    datetime, in UTC unless the text names a zone; ValueError if it is not such a time."""
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def parse_date(value: object) -> date | None:
    """``value`` as a date: one YAML read as a date (``2027-06-30``), or ISO 8601 text; None
    for anything else. The one reading of an expiry, for policy and drift waivers."""
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value)
        except ValueError:
            return None
    return None


def days_left(expires: date, today: date) -> int | None:
    """The days a waiver holds after ``today`` (0: today is its last day), None once it has
    expired: the one expiry rule of policy waivers and drift waivers (docs/drift.md)."""
    left = (expires - today).days
    return None if left < 0 else left
