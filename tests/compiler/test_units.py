"""Sizes and durations: base units out, clear errors in."""

from __future__ import annotations

import pytest

from compiler.units import MAX_AMOUNT, UnitError, format_size, parse_duration, parse_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (0, 0),
        (512, 512),
        ("512", 512),
        ("1KiB", 1024),
        ("2 TB", 2 * 10**12),
        ("1.5GiB", 3 * 2**29),
        ("500TiB", 500 * 2**40),
        ("2PiB", 2 * 2**50),
        ("10B", 10),
    ],
)
def test_sizes(text: object, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("5 gib", "did you mean GiB"),
        ("5 bananas", "unknown size unit 'bananas'"),
        ("lots", "is not a size"),
        ("1.3B", "whole number of bytes"),
        (-1, "negative"),
        (True, "boolean"),
        (1.5, "got float"),
        (2**63, "too large: at most 9223372036854775807"),
        ("8192PiB", "too large"),  # 2^63 bytes: one more than a map holds
    ],
)
def test_size_errors(text: object, fragment: str) -> None:
    with pytest.raises(UnitError, match=fragment):
        parse_size(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [(90, 90), ("90s", 90), ("30m", 1800), ("12h", 43200), ("14d", 1209600), ("1h30m", 5400)],
)
def test_durations(text: object, expected: int) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("3 weeks", "unknown duration unit 'weeks'"),
        ("soon", "not a duration"),
        ("m5", "not a"),
        ("106751991167301d", "too large"),
    ],
)
def test_duration_errors(text: str, fragment: str) -> None:
    with pytest.raises(UnitError, match=fragment):
        parse_duration(text)


def test_largest_amount_is_accepted() -> None:
    assert parse_size(MAX_AMOUNT) == MAX_AMOUNT == 2**63 - 1
    assert parse_size("8191PiB") == 8191 * 2**50
    assert parse_duration("106751991167300d") == 106751991167300 * 86400


def test_format_size_round_trips_whole_units() -> None:
    assert format_size(500 * 2**40) == "500TiB"
    assert parse_size(format_size(3 * 2**30)) == 3 * 2**30
