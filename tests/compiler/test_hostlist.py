"""Slurm hostlist semantics through the ClusterShell wrapper."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.core.hostlist import (
    MAX_HOSTS,
    MAX_NUMBER,
    MAX_RANGE,
    HostlistError,
    compress,
    expand,
    nodeset,
    parse,
)


@pytest.mark.parametrize(
    ("expr", "first", "last", "count"),
    [
        ("cn[0001-1024]", "cn0001", "cn1024", 1024),
        ("gpu[01-08,10]", "gpu01", "gpu10", 9),
        ("a[01-3]", "a01", "a03", 3),  # width from the low bound
        ("a[001-1000]", "a001", "a1000", 1000),  # past the width: natural digits
        ("a[1-010]", "a1", "a10", 10),
        ("rack[1-2]-n[01-02]", "rack1-n01", "rack2-n02", 4),  # Cartesian product
        ("login01,login02", "login01", "login02", 2),
        ("n[999-1001]", "n999", "n1001", 3),
    ],
)
def test_expand_like_slurm(expr: str, first: str, last: str, count: int) -> None:
    names = expand(expr)
    assert (names[0], names[-1], len(names)) == (first, last, count)
    assert len(set(names)) == count


def test_cartesian_product_order_and_content() -> None:
    assert expand("a[1-2]b[1-2]") == ["a1b1", "a1b2", "a2b1", "a2b2"]


# What `scontrol show hostnames` (Slurm 22.05) prints for adjacent brackets, pinned here so
# the rule holds where Slurm is not installed (test_hostlist_slurm.py asks Slurm itself).
@pytest.mark.parametrize(
    ("expr", "slurm"),
    [
        ("cn[22,130][1-2]", "cn221 cn222 cn1301 cn1302"),
        ("a[1-2][3-4]", "a13 a14 a23 a24"),
        ("a[1-2][1-2][1-2]", "a111 a112 a211 a212 a121 a122 a221 a222"),
        ("a[9-11][1]", "a91 a101 a111"),  # the joined numbers grow a digit
        ("a[001-002][0-1]", "a0010 a0011 a0020 a0021"),  # the left zeros stay
        ("[1-2][3]", "13 23"),
        ("a[1-2]-[3-4]", "a1-3 a1-4 a2-3 a2-4"),
        ("a[1-2]x[01-02]y[3]", "a1x01y3 a2x01y3 a1x02y3 a2x02y3"),
    ],
)
def test_adjacent_brackets_join_as_in_slurm(expr: str, slurm: str) -> None:
    assert sorted(expand(expr)) == sorted(slurm.split())


def test_adjacent_brackets_are_counted_before_they_are_joined() -> None:
    with pytest.raises(HostlistError) as info:
        nodeset("a[1-60000][1-60000]")
    assert (info.value.reason, info.value.offset) == ("too-large", 0)
    assert "3,600,000,000 hosts" in info.value.message


@pytest.mark.parametrize(
    ("expr", "written", "unique", "repeated"),
    [
        ("cn[01-04],cn03", 5, 4, ["cn03"]),
        ("cn[1-3,2]", 4, 3, ["cn2"]),
        ("cn[1-3],cn[2-4]", 6, 4, ["cn2", "cn3"]),
        ("a[1,11][1,11]", 4, 3, ["a111"]),  # a1+11 and a11+1: one name (Slurm prints it twice)
        ("cn01,cn1", 2, 2, []),  # two names: the zero counts
        ("r1-n[01-02],r[1]-n01", 3, 2, ["r1-n01"]),
        ("cn[01-04]", 4, 4, []),
    ],
)
def test_repeats_are_counted_and_named(
    expr: str, written: int, unique: int, repeated: list[str]
) -> None:
    hostlist = parse(expr)
    assert (hostlist.written, len(hostlist.nodes), hostlist.repeated()) == (
        written,
        unique,
        repeated,
    )


@pytest.mark.parametrize(
    ("expr", "reason", "offset"),
    [
        ("cn[5-2]", "descending", 3),
        ("cn[1-4", "syntax", 6),
        (f"cn[1-{MAX_RANGE + 1}]", "too-large", 3),
        ("cn1-4]", "syntax", 5),
        ("cn[]", "syntax", 3),
        ("cn@x", "syntax", 2),
        ("a,,b", "syntax", 2),
        ("cn[1-[2]]", "syntax", 5),
        (" cn1", "syntax", 0),
        ("cn[a-b]", "syntax", 3),
        ("a[1-60000]b[1-60000]", "too-large", 0),  # 3.6 billion names: refused, not expanded
        ("cn01 cn02", "syntax", 4),
        (f"a[{MAX_NUMBER + 1}]", "syntax", 2),
        ("cn[1-2]z[3-4],x[5-3]", "descending", 16),
        # as Slurm: more than MAX_RANGE values (repeats counted) in a bracket before another
        (f"a[1-40000,40001-{MAX_RANGE + 1}][1]", "too-large", 1),
        (f"x,a[1-{MAX_RANGE},7]b[1]", "too-large", 3),
    ],
)
def test_errors_say_why_and_where(expr: str, reason: str, offset: int) -> None:
    with pytest.raises(HostlistError) as info:
        expand(expr)
    assert info.value.reason == reason
    assert info.value.offset == offset


def test_largest_allowed_range() -> None:
    assert len(expand(f"n[1-{MAX_RANGE}]")) == MAX_RANGE


def test_only_the_last_bracket_holds_more_than_a_range() -> None:
    """Slurm's rule: the last bracket of a term may hold several full ranges."""
    assert parse(f"a[1][1-40000,40001-{MAX_RANGE + 1}]").written == MAX_RANGE + 1
    assert parse(f"a[1-40000,40001-{MAX_RANGE}][1]").written == MAX_RANGE


def test_largest_allowed_product_is_counted_not_expanded() -> None:
    per_range = MAX_HOSTS // MAX_RANGE
    assert len(nodeset(f"r[1-{per_range}]n[1-{MAX_RANGE}]")) == MAX_HOSTS
    with pytest.raises(HostlistError, match="1,048,577 hosts"):
        nodeset(f"r[1-{per_range}]n[1-{MAX_RANGE}],x1")


_prefix = st.sampled_from(["cn", "gpu", "bm", "login", "r1-n", "x"])
_width = st.integers(min_value=1, max_value=5)


@st.composite
def host_names(draw: st.DrawFn) -> list[str]:
    names: set[str] = set()
    for _ in range(draw(st.integers(1, 4))):
        prefix, width = draw(_prefix), draw(_width)
        numbers = draw(st.sets(st.integers(0, 10**width - 1), min_size=1, max_size=40))
        names.update(f"{prefix}{str(n).zfill(width)}" for n in numbers)
    return sorted(names)


@settings(max_examples=200, deadline=None)
@given(host_names())
def test_expand_after_compress_is_identity(names: list[str]) -> None:
    folded = compress(names)
    assert sorted(expand(folded)) == names


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 9000), st.integers(0, 500), st.integers(1, 5))
def test_widths_are_kept(lo: int, span: int, width: int) -> None:
    lo_s = str(lo).zfill(width)
    names = expand(f"n[{lo_s}-{lo + span}]")
    assert len(names) == span + 1
    for offset, name in enumerate(names):
        n = lo + offset
        digits = name[1:]
        assert int(digits) == n
        assert len(digits) == max(len(lo_s), len(str(n)))


_piece = st.one_of(
    st.sampled_from(["cn", "a", "r1-n", "x.y", "_", "0"]),
    st.builds(
        lambda lo, span, width: f"[{str(lo).zfill(width)}-{lo + span}]",
        st.integers(0, 120),
        st.integers(0, 15),
        st.integers(1, 3),
    ),
    st.builds(lambda a, b: f"[{a},{b}]", st.integers(0, 30), st.integers(0, 130)),
)
_expressions = st.lists(
    st.lists(_piece, min_size=1, max_size=4).map("".join), min_size=1, max_size=4
).map(",".join)


@settings(max_examples=300, deadline=None)
@given(_expressions)
def test_counting_and_repeats_agree_with_naive_expansion(expr: str) -> None:
    """The written count (computed, never expanded) and the repeats equal those of the names
    listed one by one, and the set is theirs."""
    hostlist = parse(expr)
    names = [n for t in hostlist.terms for n in t.names()]
    counts = Counter(names)
    assert hostlist.written == len(names)
    assert set(hostlist.nodes) == set(names) and len(hostlist.nodes) == len(counts)
    assert hostlist.repeated() == sorted(n for n, k in counts.items() if k > 1)
