"""Sizes and durations: base units out, and errors that name the value and say why."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.core.units import (
    DURATION_HINT,
    DURATION_PATTERN,
    DURATION_UNITS,
    MAX_AMOUNT,
    SIZE_HINT,
    SIZE_PATTERN,
    SIZE_UNITS,
    UnitError,
    format_size,
    parse_duration,
    parse_size,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (0, 0),
        (512, 512),
        ("512", 512),
        ("1KiB", 1024),
        ("2 TB", 2 * 10**12),  # one space between the number and its unit
        ("1.5GiB", 3 * 2**29),
        ("0.5KiB", 512),
        ("500TiB", 500 * 2**40),
        ("2PiB", 2 * 2**50),
        ("10B", 10),
    ],
)
def test_sizes(text: object, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("2 PIB", "'2 PIB' is not a size: unknown unit 'PIB' — did you mean PiB?"),
        ("5 gib", "unknown unit 'gib' — did you mean GiB?"),
        ("5 G", "unknown unit 'G' — did you mean GB or GiB?"),
        ("500 gigabytes", "unknown unit 'gigabytes' — did you mean GB?"),
        ("5 bananas", "'5 bananas' is not a size: unknown unit 'bananas'"),
        ("10EiB", "unknown unit 'EiB' — the largest size is 8191PiB"),
        ("1 000GiB", "a space inside a number"),
        ("3 Gi B", "a space inside the unit 'GiB'"),
        ("2  TB", "white space other than one space"),
        ("2\tTB", "white space other than one space"),
        (" 2TB", "white space before or after it"),
        ("-3GiB", "'-3GiB' is not a size: it is negative"),
        ("+3GiB", "it has a sign"),
        ("1,5TiB", "',' in a number: write a decimal point"),
        ("1.3B", "'1.3B' is not a size: it is not a whole number of bytes (1.3 B)"),
        ("lots", "'lots' is not a size: it does not start with a number"),
        ("TB", "the unit 'TB' has no number before it"),
        ("500GiB 12MiB", "a size is one number and at most one unit"),
        ("5 B B", "the unit 'B' has no number before it"),
        ("1 TB?", "the character '?' does not belong in it"),
        ("５GiB", "the character '５' does not belong"),  # digits of other scripts are not digits
        ("", "it is empty"),
        (-1, "-1 is not a size: it is negative"),
        (True, "expected a size, got True (true/false)"),
        (1.5, "expected a size, got the fraction 1.5: bytes are whole; write a unit (1.5GiB)"),
        (None, "expected a size, got nothing"),
        ([1], "expected a size, got a list"),
        (2**63, "9223372036854775808 is too large: at most 9223372036854775807 bytes"),
        ("8192PiB", "'8192PiB' is too large"),  # 2^63 bytes: one more than a map holds
    ],
)
def test_size_errors_name_the_value_and_say_why(text: object, why: str) -> None:
    with pytest.raises(UnitError) as info:
        parse_size(text)
    assert why in str(info.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (90, 90),
        ("90s", 90),
        ("30m", 1800),
        ("12h", 43200),
        ("14d", 1209600),
        ("1h30m", 5400),
        ("1h 30m", 5400),
        ("2 h", 7200),
    ],
)
def test_durations(text: object, expected: int) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("3 weeks", "'3 weeks' is not a duration: unknown unit 'weeks' — write days: a week is 7d"),
        ("30 minutes", "unknown unit 'minutes' — did you mean m?"),
        ("30M", "unknown unit 'M' — did you mean m?"),
        ("1.5h", "1.5 is a fraction; a duration is whole numbers (1h30m, not 1.5h)"),
        ("1800", "the number 1800 has no unit (write 1800s for seconds)"),
        ("1h30", "the number 30 has no unit"),
        ("soon", "it does not start with a number"),
        ("m5", "the unit 'm' has no number before it"),
        ("1h h", "the unit 'h' has no number before it"),
        ("-1h", "it is negative"),
        ("1h  30m", "white space other than one space"),
        ("1h,30m", "the character ',' does not belong"),
        (1.5, "expected a duration, got the fraction 1.5"),
        ("106751991167301d", "too large: at most 9223372036854775807 seconds"),
    ],
)
def test_duration_errors_name_the_value_and_say_why(text: object, why: str) -> None:
    with pytest.raises(UnitError) as info:
        parse_duration(text)
    assert why in str(info.value)


def test_hints_list_every_unit_and_give_an_example() -> None:
    for unit in SIZE_UNITS:
        assert re.search(rf"\b{unit}\b", SIZE_HINT), unit
    for unit in DURATION_UNITS:
        assert f" {unit}," in DURATION_HINT or f" {unit}, e.g." in DURATION_HINT, unit
    assert "e.g. 500GiB" in SIZE_HINT and "e.g. 90s" in DURATION_HINT


def test_largest_amount_is_accepted() -> None:
    assert parse_size(MAX_AMOUNT) == MAX_AMOUNT == 2**63 - 1
    assert parse_size("8191PiB") == 8191 * 2**50
    assert parse_duration("106751991167300d") == 106751991167300 * 86400


def test_format_size_round_trips_whole_units() -> None:
    assert format_size(500 * 2**40) == "500TiB"
    assert parse_size(format_size(3 * 2**30)) == 3 * 2**30


# Strings built of the pieces values are made of, so near misses are common.
_PIECES = st.sampled_from(
    ["1", "07", "512", ".", "5", " ", "  ", "\t", "-", ",", "B", "KB", "GiB", "PIB", "gib",
     "TB", "x", "s", "m", "h", "d", "w", "M"]
)  # fmt: skip
_TEXTS = st.lists(_PIECES, max_size=6).map("".join)


@settings(max_examples=400, deadline=None)
@given(_TEXTS)
def test_the_size_pattern_is_what_parses(text: str) -> None:
    """The JSON Schema's pattern and the compiler agree: a string matches SIZE_PATTERN exactly
    when it parses, but for the two checks a pattern cannot make (whole bytes, the bound)."""
    try:
        parse_size(text)
        parsed = True
    except UnitError as err:
        parsed = False
        assert str(err).startswith(repr(text)[:57]), err  # the message names the value
        if re.fullmatch(SIZE_PATTERN, text):
            assert "whole number of bytes" in str(err) or "too large" in str(err), err
    if parsed:
        assert re.fullmatch(SIZE_PATTERN, text)


@settings(max_examples=400, deadline=None)
@given(_TEXTS)
def test_the_duration_pattern_is_what_parses(text: str) -> None:
    try:
        parse_duration(text)
        parsed = True
    except UnitError as err:
        parsed = False
        assert str(err).startswith(repr(text)[:57]), err
        if re.fullmatch(DURATION_PATTERN, text):
            assert "too large" in str(err), err
    if parsed:
        assert re.fullmatch(DURATION_PATTERN, text)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=8), _TEXTS))
def test_any_text_is_a_value_or_a_reason(text: str) -> None:
    """Whatever is written, the answer is a number or a UnitError naming the value, never
    another exception."""
    for parse in (parse_size, parse_duration):
        try:
            assert parse(text) >= 0
        except UnitError as err:
            assert str(err).startswith(repr(text)[:57]), err
