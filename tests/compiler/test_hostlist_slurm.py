"""Hostlists against real Slurm: ``scontrol show hostnames`` (Debian's slurm-client).

Every expression both accept names the same hosts (Slurm lists repeats and keeps the order
written; the compiler's hostlist is a set, whose ``written`` count must equal the number
of names Slurm prints). Where the two differ, it is one of the differences that
docs/language.md ("Hostlists") lists, each pinned below. scripts/test.sh installs
slurm-client where it is missing; without it these tests are skipped, saying so.
``scontrol`` needs no controller for this, only a configuration file naming one.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.core.hostlist import MAX_RANGE, HostlistError, parse

SCONTROL = shutil.which("scontrol")
pytestmark = pytest.mark.skipif(
    SCONTROL is None,
    reason="scontrol not installed (Debian package slurm-client; scripts/test.sh installs it "
    "as root): the hostlist comparison with real Slurm did not run",
)


@pytest.fixture(scope="module")
def slurm_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    conf = tmp_path_factory.mktemp("slurm") / "slurm.conf"
    conf.write_text("ClusterName=xce-test\nSlurmctldHost=localhost\n", encoding="utf-8")
    return {**os.environ, "SLURM_CONF": str(conf)}


def slurm_hosts(expr: str, env: dict[str, str]) -> list[str] | None:
    """The names Slurm prints, in its order with repeats, or None when Slurm refuses it
    (it says so on stderr and still exits 0)."""
    assert SCONTROL is not None
    done = subprocess.run(
        [SCONTROL, "show", "hostnames", "--", expr],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if "Invalid hostlist" in done.stderr or done.returncode != 0:
        return None
    assert not done.stderr, done.stderr
    return done.stdout.split()


def assert_same_hosts(expr: str, env: dict[str, str]) -> None:
    hostlist = parse(expr)
    slurm = slurm_hosts(expr, env)
    assert slurm is not None, f"Slurm refuses {expr!r}"
    assert sorted(set(slurm)) == sorted(hostlist.nodes), expr
    assert len(slurm) == hostlist.written, expr


BOTH_ACCEPT = [
    "cn[0001-1024]",
    "gpu[01-08,10]",
    "a[01-3]",  # the width is the low bound's
    "a[1-03]",
    "a[001-1000]",  # past the width: natural digits
    "a[1-010]",
    "a[00-00]",
    "n[999-1001]",
    "x[9-10]",
    "rack[1-2]-n[01-16]",
    "login01,login02",
    "cn[22,130][1-2]",  # adjacent brackets
    "a[1-2][1-2][1-2]",
    "a[9-11][1]",
    "a[001-002][0-1]",
    "a[1,11][1,11]",  # a111 twice
    "a[1-2]x[01-02]y[3]",
    "a[1-2]-[3-4]",
    "a0[1-2]",
    "[0,0]0[0-0]",  # digits between brackets
    "[1-2]",
    "1[1-2]",
    "[1-2][3]",
    "a.b[1-2],a_b[1-2],A[1-2]",
    "cn[01-04],cn03",  # repeats: Slurm lists them, the compiler warns (XCE207)
    "cn[1-3,2]",
    f"a[1-{MAX_RANGE}]",
    "a[9223372036854775806-9223372036854775807]",
    # a bracket before another holds at most MAX_RANGE values; the last one may hold more
    f"a[1-40000,40001-{MAX_RANGE}][1]",
    f"a[1][1-40000,40001-{MAX_RANGE + 1}]",
    f"a[1-2]b[1-40000,40001-{MAX_RANGE + 1}]",
]
# The compiler's one extension: text after the last bracket (Slurm 22.05 refuses it).
ONLY_THE_COMPILER = ["gpu[01-02]-ib", "a[1-2]b[1-2]c", "[1-2]a", "cn[0-1]z,login1"]
# Slurm reads these, the compiler refuses them (docs/language.md says why).
ONLY_SLURM = [
    "a,,b",  # an empty term
    "cn01,",  # a trailing comma
    "cn01 cn02",  # white space as a separator
    "a[ 1-2]",  # white space inside brackets (Slurm pads to 2 digits!)
    "a[+1]",  # a sign
    "a[1-]",  # an open range (Slurm: a1)
    "a;b",  # characters outside letters, digits, '.', '_', '-'
    "é[1-2]",
    "a]",  # an unmatched bracket (Slurm: the name "a]")
    "a[1-2",  # an unclosed bracket (Slurm: the name "a]")
    "a[99999999999999999999]",  # Slurm clamps it to 18446744073709551615
]
NEITHER = ["n[5-3]", "a[]", f"a[1-{MAX_RANGE + 1}]", "a[1[2]]", "a[-1]", "a[1-2-3]", "a[1,,2]",
           # more than MAX_RANGE values (repeats counted) in a bracket that another follows
           f"a[1-40000,40001-{MAX_RANGE + 1}][1]", f"a[1-30000,1-{MAX_RANGE - 29999}]b[1]",
           f"x,a[1-{MAX_RANGE},7][1]"]


@pytest.mark.parametrize("expr", BOTH_ACCEPT)
def test_slurm_and_the_compiler_name_the_same_hosts(expr: str, slurm_env: dict[str, str]) -> None:
    assert_same_hosts(expr, slurm_env)


@pytest.mark.parametrize("expr", ONLY_THE_COMPILER)
def test_a_suffix_after_the_last_bracket_is_the_compilers_extension(
    expr: str, slurm_env: dict[str, str]
) -> None:
    assert parse(expr).written > 0
    assert slurm_hosts(expr, slurm_env) is None


@pytest.mark.parametrize("expr", ONLY_SLURM)
def test_what_slurm_reads_but_the_compiler_refuses(expr: str, slurm_env: dict[str, str]) -> None:
    assert slurm_hosts(expr, slurm_env) is not None
    with pytest.raises(HostlistError):
        parse(expr)


@pytest.mark.parametrize("expr", NEITHER)
def test_what_neither_reads(expr: str, slurm_env: dict[str, str]) -> None:
    assert slurm_hosts(expr, slurm_env) is None
    with pytest.raises(HostlistError):
        parse(expr)


_text = st.text(alphabet="abcxyz-._0123456789", min_size=1, max_size=4)
_range = st.builds(
    lambda lo, span, width: str(lo).zfill(width) + (f"-{lo + span}" if span else ""),
    st.integers(0, 1200),
    st.integers(0, 6),
    st.integers(1, 4),
)
_bracket = st.lists(_range, min_size=1, max_size=2).map(lambda rs: "[" + ",".join(rs) + "]")


@st.composite
def _terms(draw: st.DrawFn) -> str:
    """A Slurm term: text and brackets in any order, ending in a bracket or in text without
    brackets (Slurm's rule: no text after the last bracket)."""
    parts = draw(st.lists(st.one_of(_text, _bracket), min_size=1, max_size=4))
    if any(p.startswith("[") for p in parts):
        while not parts[-1].startswith("["):
            parts.pop()
    return "".join(parts)


_slurm_expressions = st.lists(_terms(), min_size=1, max_size=3).map(",".join)


@pytest.mark.slow
@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(expr=_slurm_expressions)
def test_generated_expressions_name_the_same_hosts(expr: str, slurm_env: dict[str, str]) -> None:
    """Expressions of Slurm's grammar, made up: each names the same hosts in both."""
    assert_same_hosts(expr, slurm_env)


@pytest.mark.slow
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(head=st.lists(st.one_of(_text, _bracket), min_size=1, max_size=4).map("".join), tail=_text)
def test_generated_suffixes_only_the_compiler_reads(
    head: str, tail: str, slurm_env: dict[str, str]
) -> None:
    expr = head + "[1-2]" + tail
    assert parse(expr).written > 0
    assert slurm_hosts(expr, slurm_env) is None


def test_the_answers_are_slurms(slurm_env: dict[str, str]) -> None:
    """Proves the comparison can fail: Slurm's own order and repeats come through."""
    assert slurm_hosts("cn[2,1],cn1", slurm_env) == ["cn2", "cn1", "cn1"]
    assert slurm_hosts("cn[2-1]", slurm_env) is None
