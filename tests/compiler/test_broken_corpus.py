"""The broken-config corpus: every folder under ``broken/`` is a site-config with known faults.

Adding a case is adding a folder: the YAML files of a small site, and ``expected.yaml``, a
list of ``{code, file, line}`` (file relative to the folder, line 1-based). Optional keys per
item: ``severity: warning``; ``message`` / ``hint`` (a substring the text must contain);
``also`` (the other places, as ``file:line``); ``conceals`` (a secret that no rendering may
contain). The compiler must report exactly that multiset of problems — nothing missing,
nothing extra — so a cascade of follow-on errors fails the case as surely as a missed one.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML
from syrupy.assertion import SnapshotAssertion

from compiler.cli.problem_render import render
from compiler.cmds.compile import main
from compiler.compile import compile_site, located
from compiler.core.problems import Problem, Problems, Where
from compiler.core.textstyle import Style
from compiler.model.document import TOP_KEYS

BROKEN = Path(__file__).parent / "broken"
CASES = sorted(p.name for p in BROKEN.iterdir() if p.is_dir())
FORMATS = ("text", "json", "github", "markdown")
# Cases that show a bug outside the files this corpus may fix; strict, so a fix is noticed.
KNOWN_BUGS: dict[str, str] = {}
# What a reviewer reads: one with hints across files, one with 'also' places, one warning-only.
SNAPSHOT_CASES = ("unknown-key-did-you-mean", "duplicate-name-across-files", "warnings-only")
_ITEM_KEYS = {"code", "file", "line", "severity", "message", "hint", "also", "conceals"}


@dataclass(frozen=True, slots=True)
class Expected:
    code: str
    file: str
    line: int
    severity: str = "error"
    message: str = ""
    hint: str = ""
    also: tuple[str, ...] | None = None
    conceals: str = ""

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.severity, self.code, self.file, self.line)


def load_expected(case: str) -> list[Expected]:
    """``expected.yaml`` of a case, checked for shape so a typo there fails loudly."""
    raw = YAML(typ="safe").load((BROKEN / case / "expected.yaml").read_text(encoding="utf-8"))
    assert isinstance(raw, list), f"{case}/expected.yaml must be a list of problems"
    out = []
    for item in raw:
        assert isinstance(item, dict) and {"code", "file", "line"} <= set(item), item
        assert set(item) <= _ITEM_KEYS, f"{case}: unknown keys {set(item) - _ITEM_KEYS}"
        also = item.get("also")
        out.append(
            Expected(
                code=item["code"],
                file=item["file"],
                line=item["line"],
                severity=item.get("severity", "error"),
                message=item.get("message", ""),
                hint=item.get("hint", ""),
                also=tuple(also) if also is not None else None,
                conceals=item.get("conceals", ""),
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class Compiled:
    problems: list[Problem]
    ok: bool  # the compiler produced a map


def copy_case(case: str, dest: Path) -> Path:
    """The case's site files without ``expected.yaml`` (which is YAML the compiler would read)."""
    site = dest / case
    shutil.copytree(BROKEN / case, site, ignore=shutil.ignore_patterns("expected.yaml"))
    return site


def compile_here(site: Path, monkeypatch: pytest.MonkeyPatch) -> Compiled:
    """Compile from inside the site so reported paths are relative to it, as in expected.yaml."""
    monkeypatch.chdir(site)
    problems = Problems()
    compiled, files = compile_site(Path("."), problems)
    return Compiled(located(problems, files), compiled is not None)


@pytest.fixture
def case_site(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    return copy_case(request.param, tmp_path)


def _case_params() -> Iterator[Any]:
    for case in CASES:
        marks = (
            [pytest.mark.xfail(reason=KNOWN_BUGS[case], strict=True)] if case in KNOWN_BUGS else []
        )
        yield pytest.param(case, marks=marks, id=case)


def _where(p: Problem | Where) -> str:
    return f"{p.file}:{p.line}"


def test_corpus_is_complete() -> None:
    assert len(CASES) >= 35
    missing = [c for c in CASES if not (BROKEN / c / "expected.yaml").is_file()]
    assert not missing, f"cases without expected.yaml: {missing}"
    codes = {e.code for c in CASES for e in load_expected(c)}
    # Every code of the compiler's ranges that a site-config can trigger appears in some case.
    assert {"XCE001", "XCE002", "XCE003", "XCE004", "XCE005"} <= codes
    assert {f"XCE10{i}" for i in range(1, 7)} <= codes
    assert {f"XCE20{i}" for i in range(1, 7)} <= codes
    assert {"XCE301", "XCE302", "XCE304", "XCE305"} <= codes
    assert {f"XCE40{i}" for i in range(1, 10)} | {"XCE410", "XCE411"} <= codes
    assert {f"XCE41{i}" for i in range(2, 8)} <= codes  # topology and volumes
    assert {"XCE501", "XCE502", "XCE503"} <= codes


@pytest.mark.parametrize("case_site", list(_case_params()), indirect=True)
def test_case_reports_exactly_the_expected_problems(
    case_site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = load_expected(case_site.name)
    result = compile_here(case_site, monkeypatch)
    got = Counter((p.severity.value, p.code, p.file, p.line) for p in result.problems)
    assert got == Counter(e.key for e in expected), "\n" + "\n".join(
        f"{p.severity.value} {p.code} {_where(p)}: {p.message}" for p in result.problems
    )
    by_key = {(p.severity.value, p.code, p.file, p.line): p for p in result.problems}
    for e in expected:
        p = by_key[e.key]
        assert e.message in p.message, (e, p.message)
        assert e.hint in p.hint, (e, p.hint)
        if e.also is not None:
            assert tuple(_where(w) for w in p.also) == e.also, (e, p.also)
    has_errors = any(e.severity == "error" for e in expected)
    assert result.ok is not has_errors


@pytest.mark.parametrize("case_site", CASES, indirect=True)
def test_cli_exit_code_order_and_no_traceback(
    case_site: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every format: exit 1 for errors, 0 for warnings only; sorted; no secret ever shown."""
    expected = load_expected(case_site.name)
    want = 1 if any(e.severity == "error" for e in expected) else 0
    secrets = [e.conceals for e in expected if e.conceals]
    monkeypatch.chdir(case_site)
    for fmt in FORMATS:
        code = main([".", "--out", str(tmp_path / f"build-{fmt}"), "--format", fmt])
        out, err = capsys.readouterr()
        shown = out + err
        assert code == want, shown
        assert "Traceback" not in shown and "internal error" not in shown, shown
        for secret in secrets:
            assert secret not in shown, f"{fmt} output shows a secret"
        if fmt == "json" and expected:
            places = [(p["file"], p["line"], p["column"]) for p in json.loads(out)["problems"]]
            assert places == sorted(places)


def test_problems_are_sorted_by_file_then_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Problems found by different stages (schema, references) in several files interleave."""
    site = copy_case("invalid-items-no-cascade", tmp_path)
    problems = compile_here(site, monkeypatch).problems
    places = [(p.file, p.line) for p in problems]
    assert places == sorted(places)
    assert [p.file for p in problems] == ["datasets.yaml"] * 2 + ["providers.yaml"] * 3
    assert len({p.code for p in problems}) == 5  # several stages, yet one order


def test_a_file_that_does_not_parse_causes_no_cascade(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = copy_case("syntax-error-no-cascade", tmp_path)
    broken = site / "providers.yaml"
    text = broken.read_text()
    assert [p.code for p in compile_here(site, monkeypatch).problems] == ["XCE001"]
    # Without that file, the other one's references would all fail: the cascade is real...
    broken.unlink()
    echoes = compile_here(site, monkeypatch).problems
    assert [p.code for p in echoes].count("XCE301") == 3
    # ...and fixing the one bad line is all the site needed.
    broken.write_text(text.replace("\n   params", "\n    params"))
    assert compile_here(site, monkeypatch).problems == []


def test_overcommit_is_the_only_difference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = copy_case("quota-overcommit-clean", tmp_path)
    assert compile_here(site, monkeypatch).problems == []
    volumes = site / "storage.yaml"
    volumes.write_text(volumes.read_text().replace("overcommit: true", "overcommit: false"))
    assert [p.code for p in compile_here(site, monkeypatch).problems] == ["XCE401"]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("case", SNAPSHOT_CASES)
def test_rendered_output_snapshot(
    case: str,
    fmt: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    snapshot: SnapshotAssertion,
) -> None:
    problems = compile_here(copy_case(case, tmp_path), monkeypatch).problems
    assert render(problems, fmt, Style(color=False)) == snapshot


# --- fuzz: random YAML-ish documents never crash the compiler --------------------------------

_WORDS = [
    *TOP_KEYS,
    *("name", "hosts", "provider", "location", "copies", "users", "projects", "capacity"),
    *("kind", "active", "standby", "overrides", "provisioned", "count", "min", "max", "volume"),
    *("pool", "user", "project", "limit", "credentials", "params", "command", "mounted_by"),
    *("size", "digest", "source", "borrow", "amount", "licenses", "storage", "counters"),
]
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**6), max_value=10**20),
    st.text(max_size=12),
    st.sampled_from(
        ["cn[1-4]", "cn[4-1]", "group/cpu", "host/cn1", "site", "1TiB", "30m", "env:X"]
    ),
)
_KEYS = st.one_of(st.sampled_from(_WORDS), st.text(max_size=6), st.integers(-3, 3), st.none())
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=5)),
    max_leaves=30,
)
_DOCUMENTS = st.one_of(
    st.dictionaries(st.sampled_from(_WORDS), _VALUES, max_size=6).map(
        lambda d: {"version": 1, **d}
    ),
    _VALUES,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=st.lists(_DOCUMENTS, min_size=1, max_size=3))
def test_random_documents_give_problems_never_exceptions(docs: list[Any]) -> None:
    yaml = YAML(typ="safe", pure=True)
    with tempfile.TemporaryDirectory() as tmp:
        for i, doc in enumerate(docs):
            with open(Path(tmp) / f"f{i}.yaml", "w", encoding="utf-8") as fh:
                yaml.dump(doc, fh)
        problems = Problems()
        compiled, files = compile_site(Path(tmp), problems)
        shown = located(problems, files)
    assert compiled is not None or problems.has_errors  # never a silent failure
    for p in shown:
        assert p.code.startswith("XCE") and p.where is not None and p.line is not None
    for fmt in FORMATS:
        render(shown, fmt)
