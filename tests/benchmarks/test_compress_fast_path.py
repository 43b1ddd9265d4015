"""``compress`` skips ClusterShell's per-name parsing for speed; its text must not change."""

from __future__ import annotations

from ClusterShell.NodeSet import NodeSet
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.core.hostlist import compress

# Fast-path names (letters + digits, any padding) mixed with slow-path ones (digits inside,
# no digits, a leading digit), in any order and with repeats.
_name = st.one_of(
    st.builds(
        lambda p, n: p + n,
        st.sampled_from(["cn", "gn", "a-b", "x.y", "q_", "n"]),
        st.from_regex(r"[0-9]{1,6}", fullmatch=True),
    ),
    st.from_regex(r"[a-z]{1,3}[0-9]{1,3}[a-z._-]{1,3}[0-9]{0,3}", fullmatch=True),
    st.from_regex(r"[a-z][a-z._-]{0,5}", fullmatch=True),
    st.from_regex(r"[0-9]{1,4}[a-z]{0,2}", fullmatch=True),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_name, max_size=60))
def test_compress_matches_clustershell_folding(names: list[str]) -> None:
    assert compress(names) == str(NodeSet.fromlist(names))


def test_compress_keeps_mixed_padding_apart() -> None:
    names = ["cn1", "cn01", "cn001", "cn2", "cn02", "cn10", "cn010", "cn0"]
    assert compress(names) == str(NodeSet.fromlist(names))
