"""Issue 21: what the compiler used to take silently, and now refuses or names.

The broken corpus holds a case per point (``count-with-unit``, ``volume-paths-overlap``,
``bare-durations``, ``yaml-mistakes-in-words``, ``dataset-digest-missing``); these tests
hold what a case cannot say: the values a warning leaves in the map, the schema's words, the
parser's text kept out of every message, and the normalising of folder paths.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compiler.checks.volumes import folder_parts
from compiler.compile import compile_site
from compiler.core.problems import Problems
from compiler.core.types import COUNT_COUNTERS, NO_UNIT, Count, Counters
from compiler.emit.schema import site_file_schema, value_schema
from compiler.source.yaml_source import load_text

BROKEN = Path(__file__).parent / "broken"
# What ruamel's parser says; a message in words shows none of it.
PARSER_WORDS = ("<block", "scanning", "mapping values are not allowed", "expected ','",
                "could not find", "cannot start any token", "while parsing")


def test_a_bare_duration_is_seconds_in_the_map(tmp_path: Path) -> None:
    """The warning changes nothing compiled: 30 is 30 seconds, a plain JSON number."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "site.yaml").write_text("version: 1\nsite:\n  name: t\n  join_deadline: 30\n")
    problems = Problems()
    compiled, _ = compile_site(site, problems)
    assert compiled is not None and not problems.has_errors
    assert [p.code for p in problems] == ["XCE430"]
    written = json.loads(compiled.supply_map.dumps())
    assert written["settings"]["join_deadline"] == 30


@pytest.mark.parametrize("written", ["30s", "30m", "0", "1h30m"])
def test_a_duration_with_a_unit_or_zero_is_no_warning(tmp_path: Path, written: str) -> None:
    (tmp_path / "site.yaml").write_text(
        f"version: 1\nsite:\n  name: t\n  join_deadline: {written}\n"
    )
    problems = Problems()
    compile_site(tmp_path, problems)
    assert list(problems) == []


def test_the_schema_says_a_count_takes_no_unit() -> None:
    """An editor shows the compiler's words: a count's form, and each counting counter."""
    assert NO_UNIT in value_schema(Count)["errorMessage"]
    counters = value_schema(Counters)
    assert set(counters["properties"]) == set(COUNT_COUNTERS)
    assert NO_UNIT in counters["properties"]["slots"]["errorMessage"]
    assert counters["additionalProperties"]["anyOf"][1]["pattern"]  # mem: a size still
    group = site_file_schema()["$defs"]["HostGroup"]["properties"]["counters"]
    assert group["$ref"] == "#/$defs/counters"


def _yaml_cases() -> list[Path]:
    return sorted((BROKEN / "yaml-mistakes-in-words").glob("*.yaml"))


@pytest.mark.parametrize("path", _yaml_cases(), ids=lambda p: p.name)
def test_syntax_errors_show_no_parser_text(path: Path) -> None:
    if path.name in ("expected.yaml", "site.yaml", "no-space-parses.yaml"):
        return
    problems = Problems()
    assert load_text(path.read_text(), path.name, problems) is None
    (problem,) = problems
    shown = problem.message + problem.hint
    assert not [w for w in PARSER_WORDS if w in shown], shown
    assert problem.where is not None and problem.where.line and problem.where.column


def test_an_unknown_parser_complaint_keeps_its_text() -> None:
    """Where no case fits, the parser's own words stay (better than a guess)."""
    problems = Problems()
    load_text("version: 1\nsite: &a\n  name: *b\n", "s.yaml", problems)
    (problem,) = problems
    assert problem.code == "XCE001" and "b" in problem.message


@pytest.mark.parametrize(
    ("path", "parts"),
    [
        ("/shared/xce/", ("shared", "xce")),
        ("//shared//xce", ("shared", "xce")),
        ("/a/b/../c", ("a", "c")),
        ("/a/./b", ("a", "b")),
        ("cache/gpu", ("cache", "gpu")),
        ("/..", ()),
    ],
)
def test_folder_paths_compare_once_normalised(path: str, parts: tuple[str, ...]) -> None:
    assert folder_parts(path) == parts
