"""Slurm hostlist semantics through the ClusterShell wrapper."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.hostlist import MAX_HOSTS, MAX_RANGE, HostlistError, compress, expand, nodeset


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
    ],
)
def test_errors_say_why_and_where(expr: str, reason: str, offset: int) -> None:
    with pytest.raises(HostlistError) as info:
        expand(expr)
    assert info.value.reason == reason
    assert info.value.offset == offset


def test_largest_allowed_range() -> None:
    assert len(expand(f"n[1-{MAX_RANGE}]")) == MAX_RANGE


def test_largest_allowed_product_is_counted_not_expanded() -> None:
    per_range = MAX_HOSTS // MAX_RANGE
    assert len(nodeset(f"r[1-{per_range}]n[1-{MAX_RANGE}]")) == MAX_HOSTS
    with pytest.raises(HostlistError, match="1,048,577 hosts"):
        nodeset(f"r[1-{per_range}]n[1-{MAX_RANGE}],x1")


_prefix = st.sampled_from(["cn", "gpu", "bm", "login", "r1-n", "x"])
_width = st.integers(min_value=1, max_value=5)


@st.composite
def host_names(draw: st.DrawFn) -> list[str]:
    names = set()
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
