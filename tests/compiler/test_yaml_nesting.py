"""No YAML input crashes the compiler: nesting is measured before any parser builds it.

The C parser's composer recurses once per level and dies of a C stack overflow (SIGSEGV,
exit 139, no output) at some 25,000 levels. ``compiler.source.yaml_nesting.check_nesting`` runs
first on every text: a quick bound that must never be lower than the depth any parser
reaches, and the exact depth from the pure scanner where the bound is too high. These tests
hold both to what ruamel's C and pure parsers really do, on random texts built from the
pieces that confuse a naive bracket counter (quotes, apostrophes, comments, block scalars,
hostlists), and run the real commands on inputs far beyond the crash depth.
"""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.events import CollectionEndEvent, CollectionStartEvent

import compiler.source.yaml_nesting as nesting
from compiler.core.problems import Problems
from compiler.source.yaml_nesting import MAX_DEPTH, TooDeep, check_nesting
from compiler.source.yaml_source import load_text
from tests.conftest import EXAMPLE_SITE

SMALL = 8  # the limit the property tests use, so random texts reach it


def event_depth(text: str, pure: bool) -> int:
    """The deepest nesting a parser reaches in ``text`` before it stops, valid or not."""
    depth = deepest = 0
    try:
        for event in YAML(typ="safe", pure=pure).parse(text):
            if isinstance(event, CollectionStartEvent):
                depth += 1
                deepest = max(deepest, depth)
            elif isinstance(event, CollectionEndEvent):
                depth -= 1
    except YAMLError:
        pass
    return deepest


def raises_too_deep(text: str) -> bool:
    try:
        check_nesting(text)
    except TooDeep:
        return True
    return False


# --- the reproduction and its variants, as the user runs them -------------------------------

SITE = "version: 1\nsite: {name: x}\n"
DEEP = 30_000
VARIANTS = {  # the file's body, the line where it gets too deep
    "flow-sequences": ("x: " + "[" * DEEP + "]" * DEEP, 2),
    "flow-mappings": ("x: " + "{a: " * DEEP + "}" * DEEP, 2),
    "one-pair-mappings": ("x: " + "[a: " * DEEP + "]" * DEEP, 2),
    "compact-dashes": ("x:\n  " + "- " * DEEP + "a", 3),
    "dashes-then-flow": ("x:\n  " + "- " * 30 + "{a: [" * DEEP, 3),
    "unclosed": ("x: " + "[" * 200_000, 2),
    "after-an-apostrophe": ("a: don't\nx: " + "[" * DEEP + "]" * DEEP + "\nb: '", 3),
}


def _run(command: str, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A console script as installed (``sys.exit(main())``), in a child process."""
    module = {"xce-compile": "compiler.cmds.compile", "xce-plan": "reconciler.cmds.plan",
              "xce-apply": "reconciler.cmds.apply"}[command]
    code = f"import sys; from {module} import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def deep_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reproduction's site, with one file per variant: every file is reported."""
    site = tmp_path_factory.mktemp("deep") / "d"
    site.mkdir()
    (site / "site.yaml").write_text(SITE)
    for name, (body, _) in VARIANTS.items():
        (site / f"{name}.yaml").write_text("version: 1\n" + body + "\n")
    return site


def _assert_refused(done: subprocess.CompletedProcess[str]) -> None:
    shown = done.stdout + done.stderr
    assert done.returncode == 1, (done.returncode, shown[-2000:])  # not -SIGSEGV, not 139
    assert "Traceback" not in shown and "internal error" not in shown, shown[-2000:]
    for name, (_, line) in VARIANTS.items():
        assert f"{name}.yaml:{line}:" in shown, (name, shown[-3000:])
    assert shown.count(f"error[XCE001]: YAML nests more than {MAX_DEPTH} levels") == len(VARIANTS)


def test_xce_compile_refuses_every_deep_form(deep_site: Path, tmp_path: Path) -> None:
    done = _run("xce-compile", str(deep_site), "--out", str(tmp_path / "build"), cwd=tmp_path)
    _assert_refused(done)
    assert not (tmp_path / "build").exists()


@pytest.mark.parametrize("command", ["xce-plan", "xce-apply"])
def test_plan_and_apply_refuse_it_too(command: str, deep_site: Path, tmp_path: Path) -> None:
    """Both compile the site first; neither may crash, nor leave any state behind."""
    workdir = tmp_path / "work"
    extra = ["--auto-approve"] if command == "xce-apply" else []
    _assert_refused(_run(command, str(deep_site), "--workdir", str(workdir), *extra,
                         cwd=tmp_path))
    assert not workdir.exists() or not any(workdir.rglob("*.sqlite"))


def test_the_crash_is_real_without_the_check(tmp_path: Path) -> None:
    """The C parser alone does die of the reproduction (here on a 1 MiB stack, where it
    dies sooner): the tests above are not vacuous."""
    path = tmp_path / "x.yaml"
    path.write_text(VARIANTS["flow-sequences"][0])
    code = ("import sys; from ruamel.yaml import YAML; "
            "YAML(typ='safe').load(open(sys.argv[1]).read())")

    def small_stack() -> None:
        hard = resource.getrlimit(resource.RLIMIT_STACK)[1]
        resource.setrlimit(resource.RLIMIT_STACK, (2**20, hard))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                          timeout=120, check=False, preexec_fn=small_stack)
    assert done.returncode == -signal.SIGSEGV


def test_the_exact_scan_stops_at_the_first_level_too_deep() -> None:
    """Brackets behind quotes defeat the quick bound; the exact scan then stops where the
    limit is passed, so 20 MB more of the same cost (almost) nothing."""
    head = "x: " + '["[", ' * (MAX_DEPTH + 1)

    def measured(tail: str) -> float:
        started = time.process_time()
        with pytest.raises(TooDeep) as caught:
            check_nesting(head + tail)
        assert (caught.value.line, caught.value.column) == (0, 3 + 6 * (MAX_DEPTH - 1))
        return time.process_time() - started

    small = measured("a, " * 100)
    assert measured("a, " * 7_000_000) < small + 1.5


# --- places, and text that only looks like nesting ------------------------------------------


def _problem(text: str) -> tuple[str, int | None, int | None, str] | None:
    problems = Problems()
    load_text(text, "f.yaml", problems)
    found = [(p.code, p.line, p.column, p.message) for p in problems]
    assert len(found) <= 1, found
    return found[0] if found else None


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ("x: " + "[" * 64 + "]" * 64, 1, 67),  # the mapping is level 1: the 64th '[' is 65
        ("x: " + "{a: " * 64 + "}" * 64, 1, 256),
        ("".join(" " * (2 * i) + f"k{i}:\n" for i in range(70)), 65, 129),
        ("".join(" " * (2 * i) + "-\n" for i in range(70)), 65, 129),
        ("".join(" " * (2 * i) + f"k{i}:\n" + " " * (2 * i) + "-\n" for i in range(40)), 65, 65),
        ("".join(" " * (2 * i) + "?\n" for i in range(70)), 65, 129),
        ("- " * 70 + "a", 1, 129),
        ("x: " + "[a: " * 40 + "]" * 40, 1, 129),  # each '[a: ' is a list and a mapping
        ("a:\n  b: [x, {c: " + "[" * 70, 2, 74),
        ("x: &a " + "[" * 70, 1, 70),
        ("x:\r" + "".join(" " * (2 * i + 2) + f"k{i}:\r" for i in range(70)), 65, 129),
    ],
    ids=["flow-seq", "flow-map", "block-maps", "block-seqs", "indentless", "explicit-keys",
         "compact-dashes", "pairs", "mixed", "anchored", "lone-cr-breaks"],
)
def test_too_deep_is_reported_where_it_happens(text: str, line: int, column: int) -> None:
    found = _problem(text)
    assert found is not None and found[:3] == ("XCE001", line, column), found
    assert f"nests more than {MAX_DEPTH} levels deep" in found[3]


@pytest.mark.parametrize(
    "text",
    [
        "x: " + "[" * 63 + "]" * 63,  # exactly at the limit
        'x: "' + "[" * 5000 + '"',
        "x: '" + "{" * 5000 + "'",
        "x: 1  # " + "[" * 5000,
        "x: |\n  " + "[" * 5000 + "\n" + " " * 200 + "y\n",
        "x: >\n" + "".join(" " * (2 * i + 2) + "- a:\n" for i in range(100)),
        "x: [" + ", ".join(['"]]]"'] * 100) + ", " + "[" * 60 + "]" * 60 + "]",
        "".join(f"k{i}: plain text ]]]] then [[[[ more\n" for i in range(100)),
        "hosts: " + ",".join(f"cn[{i:02d}-{i + 1:02d}]" for i in range(0, 5000, 2)),
        "a: don't\nb: [x, y]\nc: it's\n",
        "a: text\n  \"continued [[[[\n" + "b: " + "[" * 10 + "]" * 10,
    ],
    ids=["limit", "double-quoted", "single-quoted", "comment", "literal-block",
         "folded-block", "quoted-closers", "plain-brackets", "hostlists", "apostrophes",
         "plain-continuation"],
)
def test_brackets_in_text_are_not_nesting(text: str) -> None:
    assert _problem("version: 1\n" + text) is None


def test_alias_depth_is_reported_at_the_container() -> None:
    """Aliases nest deeper than the text does: found after loading, placed by the nodes."""
    inner = "[" * 40 + "x" + "]" * 40
    text = f"version: 1\na: &a {inner}\nb: " + "[" * 40 + "*a" + "]" * 40 + "\n"
    found = _problem(text)
    assert found is not None and found[:2] == ("XCE001", 3), found
    assert "through aliases it nests more than 64 levels deep" in found[3]


@pytest.mark.parametrize(
    ("text", "line", "also"),
    [
        ("version: 1\nx:\n  y: &p {next: *p}\n", 3, 3),
        ("version: 1\nl: &l\n  - a\n  - *l\n", 2, 2),  # a block list starts at its anchor
    ],
)
def test_alias_cycles_are_reported_where_the_alias_is(text: str, line: int, also: int) -> None:
    problems = Problems()
    load_text(text, "f.yaml", problems)
    (p,) = problems
    assert (p.code, p.line) == ("XCE001", line) and "(a cycle)" in p.message
    assert [w.line for w in p.also] == [also]


# --- the quick bound is sound, the exact depth is exact: against both real parsers ----------

_PIECES = [
    "[", "]", "{", "}", ", ", ",", ": ", ":", "- ", "? ", "-", "a", "b c", "'", "''", '"',
    '\\"', "#", " #", " # [", "|", ">", "&a ", "*a", "!t ", "cn[01-04]", "x]", "\t", "\r",
    "\n", "\n", "\n  ", "\n    ", "\n      ", "\n- ", "\n  - ", "--- ",
]  # fmt: skip
_TEXTS = st.lists(st.sampled_from(_PIECES), max_size=40).map("".join)


@pytest.fixture
def small_limit(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(nesting, "MAX_DEPTH", SMALL)
    yield


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(text=_TEXTS)
def test_the_quick_bound_is_never_below_what_a_parser_reaches(small_limit: None, text: str) -> None:
    if nesting._surely_shallow(text):
        assert event_depth(text, pure=False) <= SMALL
        assert event_depth(text, pure=True) <= SMALL


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(text=_TEXTS)
def test_whatever_a_parser_reaches_the_check_refuses(small_limit: None, text: str) -> None:
    """Deeper than the limit in either parser, valid or not: refused (too deep, or the
    scanner's syntax error); a valid document within the limit is never refused."""
    deepest = max(event_depth(text, pure=False), event_depth(text, pure=True))
    try:
        check_nesting(text)
    except YAMLError:
        return
    assert deepest <= SMALL


def _nested(depth: int) -> st.SearchStrategy[Any]:
    """A document exactly ``depth`` levels deep: one path down, a leaf beside it at most."""
    leaf = st.sampled_from(["a", "[b]", "it's", "#", 1])
    if depth == 0:
        return leaf
    inner = _nested(depth - 1)
    pairs = st.tuples(inner, st.one_of(st.none(), leaf))
    return st.one_of(
        pairs.map(lambda p: [p[0]] if p[1] is None else [p[1], p[0]]),
        pairs.map(lambda p: {"k": p[0]} if p[1] is None else {"m n": p[1], "k": p[0]}),
    )


def _depth(data: Any) -> int:
    if isinstance(data, dict):
        return 1 + max(map(_depth, data.values()))
    if isinstance(data, list):
        return 1 + max(map(_depth, data))
    return 0


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(data=st.integers(SMALL - 2, SMALL + 2).flatmap(_nested),
       flow=st.sampled_from([None, True, False]))
def test_the_exact_depth_is_the_documents(small_limit: None, data: Any, flow: bool | None) -> None:
    """Documents written in block, flow and mixed style: refused exactly when too deep."""
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = flow
    stream = _Text()
    yaml.dump(data, stream)
    assert raises_too_deep(stream.text) is (_depth(data) > SMALL), stream.text


class _Text:
    def __init__(self) -> None:
        self.text = ""

    def write(self, chunk: str | bytes) -> None:
        self.text += chunk.decode() if isinstance(chunk, bytes) else chunk


def test_the_example_and_benchmark_sites_stay_on_the_fast_path(tmp_path: Path) -> None:
    """The quick bound settles every file of the example site and of a generated benchmark
    site, so the compile benchmark does not pay for the exact scan."""
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, str(root / "benchmarks" / "gen_site.py"), "--hosts=2000",
                    "--groups=20", "--users=300", "--datasets=40", "--copies=3",
                    str(tmp_path / "bench")], capture_output=True, check=True)
    files = [*EXAMPLE_SITE.rglob("*.yaml"), *(tmp_path / "bench").rglob("*.yaml")]
    assert len(files) > 20
    slow = [str(p) for p in files if not nesting._surely_shallow(p.read_text(encoding="utf-8"))]
    assert slow == []


def test_the_limit_is_the_documented_one() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "language.md").read_text()
    assert f"deeper than {MAX_DEPTH} levels" in doc
