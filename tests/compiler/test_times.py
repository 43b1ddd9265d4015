"""Instants and dates: each named form of a time, and the one reading of ISO 8601 text."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from compiler.core.times import (
    TimeError,
    UtcForm,
    format_date,
    format_utc,
    parse_date,
    parse_instant,
    utc_instant,
)

NOON = datetime(2024, 5, 1, 12, 0, 7, tzinfo=UTC)


@pytest.mark.parametrize(("form", "text"), [
    ("iso", "2024-05-01T12:00:07Z"),
    ("offset", "2024-05-01T12:00:07+00:00"),
    ("stamp", "20240501T120007Z"),
    ("minutes", "2024-05-01 12:00 UTC"),
    ("seconds", "2024-05-01 12:00:07 UTC"),
])
def test_each_form_of_one_instant(form: UtcForm, text: str) -> None:
    assert format_utc(NOON, form) == text
    assert format_utc(NOON.timestamp(), form) == text
    elsewhere = NOON.astimezone(timezone(timedelta(hours=2)))
    assert format_utc(elsewhere, form) == text


def test_a_time_without_a_zone_is_utc() -> None:
    assert parse_instant("2024-05-01T12:00:07") == NOON
    assert parse_instant("2024-05-01 14:00:07+02:00") == NOON
    assert format_utc(NOON.replace(tzinfo=None)) == "2024-05-01T12:00:07Z"
    with pytest.raises(ValueError):
        parse_instant("yesterday")


def test_dates_read_from_yaml_or_text() -> None:
    day = date(2027, 6, 30)
    assert parse_date(day) == parse_date("2027-06-30") == day
    assert parse_date(NOON) is None  # a time is no date
    assert parse_date("30/06/2027") is None
    assert parse_date(20270630) is None
    assert format_date(day) == "2027-06-30"


def test_an_instant_no_output_can_print() -> None:
    assert utc_instant(NOON.timestamp()) == NOON.timestamp()
    with pytest.raises(TimeError, match="year 9999"):
        utc_instant(1e15)
