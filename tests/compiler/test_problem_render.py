"""The four renderings of problems: what a terminal, a tool, GitHub and a PR comment receive."""

from __future__ import annotations

import json
import re

import pytest

from compiler.cli.problem_render import (
    render,
    render_github,
    render_json,
    render_markdown,
    render_text,
)
from compiler.core.problems import Problem, Problems, Severity, Where
from compiler.core.textstyle import Style

DUP = Problem(
    "XCE302",
    "provider 'fs' is defined twice",
    "rename one of them",
    Where("storage.yaml", line=3, column=11),
    also=(Where("providers.yaml", line=3, column=11),),
)
WARN = Problem(
    "XCE501",
    "volume 'archive' is mounted by no host group",
    "list the groups under 'mounted_by:'",
    Where("more.yaml", line=6, column=11),
    Severity.WARNING,
)
NO_FILE = Problem("XCE703", "provider did not answer", "", None, subject="shared-fs")
UNLOCATED = Problem("XCE006", "cannot read file: Permission denied", "", Where("site.yaml"))


def test_text_is_compiler_style_with_also_hint_and_summary() -> None:
    assert render_text([DUP, WARN], Style(color=False)) == (
        "storage.yaml:3:11: error[XCE302]: provider 'fs' is defined twice\n"
        "  see also: providers.yaml:3:11\n"
        "  hint: rename one of them\n"
        "more.yaml:6:11: warning[XCE501]: volume 'archive' is mounted by no host group\n"
        "  hint: list the groups under 'mounted_by:'\n"
        "1 error(s), 1 warning(s)\n"
    )


def test_text_places_without_a_line_or_a_file() -> None:
    text = render_text([NO_FILE, UNLOCATED, Problem("XCE105", "no site")])
    lines = text.splitlines()
    assert lines[0] == "shared-fs: error[XCE703]: provider did not answer"
    assert lines[1] == "site.yaml: error[XCE006]: cannot read file: Permission denied"
    assert lines[2] == "<site>: error[XCE105]: no site"
    assert lines[-1] == "3 error(s), 0 warning(s)"


def test_text_names_the_subject_next_to_a_file_place() -> None:
    p = Problem("XCE403", "served by no proxy", "", Where("p.yaml", line=2), subject="fs")
    assert render_text([p]).startswith("p.yaml:2:1: error[XCE403]: served by no proxy (fs)\n")


def test_text_colour_only_when_asked() -> None:
    assert "\x1b[" not in render_text([DUP, WARN], Style(color=False))
    coloured = render_text([DUP, WARN], Style(color=True))
    assert "\x1b[31merror\x1b[0m" in coloured and "\x1b[33mwarning\x1b[0m" in coloured


def test_nothing_to_say_is_empty() -> None:
    assert render_text([]) == "" and render_github([]) == ""
    assert render_markdown([]) == "No problems found.\n"
    assert json.loads(render_json([])) == {
        "valid": True,
        "errors": 0,
        "warnings": 0,
        "problems": [],
    }


def test_json_is_valid_with_warnings_only_and_keeps_every_field() -> None:
    doc = json.loads(render_json([WARN]))
    assert (doc["valid"], doc["errors"], doc["warnings"]) == (True, 0, 1)
    doc = json.loads(render_json([DUP, WARN, NO_FILE]))
    assert (doc["valid"], doc["errors"], doc["warnings"]) == (False, 2, 1)
    first, _, last = doc["problems"]
    assert first == {
        "code": "XCE302",
        "severity": "error",
        "file": "storage.yaml",
        "line": 3,
        "column": 11,
        "subject": None,
        "message": "provider 'fs' is defined twice",
        "hint": "rename one of them",
        "also": [{"file": "providers.yaml", "line": 3, "column": 11}],
    }
    assert (last["file"], last["line"], last["subject"]) == (None, None, "shared-fs")


def test_github_annotations_escape_data_and_properties() -> None:
    p = Problem(
        "XCE101",
        "100% wrong\nsecond line\r",
        "fix, then retry",
        Where("dir,with:odd/name.yaml", line=4, column=2),
    )
    assert render_github([p]) == (
        "::error file=dir%2Cwith%3Aodd/name.yaml,line=4,col=2,title=XCE101::"
        "100%25 wrong%0Asecond line%0D (hint: fix, then retry)\n"
    )


def test_github_warning_also_and_subject_without_file() -> None:
    out = render_github([DUP, WARN, NO_FILE]).splitlines()
    assert out[0].endswith("(see also providers.yaml:3:11) (hint: rename one of them)")
    assert out[1].startswith("::warning file=more.yaml,line=6,col=11,title=XCE501::")
    assert out[2] == "::error title=XCE703::shared-fs: provider did not answer"


def test_markdown_table_cells_cannot_break_the_table() -> None:
    p = Problem("XCE106", "a|b\nc", "use x | y", Where("f.yaml", line=1, column=1))
    rows = render_markdown([p, WARN, DUP]).splitlines()
    assert rows[0] == "| | where | code | problem | how to fix |"
    assert rows[2] == "| ❌ | `f.yaml:1:1` | XCE106 | a\\|b c | use x \\| y |"
    assert rows[3].startswith("| ⚠️ | `more.yaml:6:11` | XCE501 |")
    assert "(see also `providers.yaml:3:11`)" in rows[4]
    assert all(len(re.findall(r"(?<!\\)\|", row)) == 6 for row in rows)  # 5 cells each


@pytest.mark.parametrize("fmt", ["text", "json", "github", "markdown"])
def test_render_dispatches_and_keeps_the_given_order(fmt: str) -> None:
    """Renderers do not reorder; sorting is the locator's job (see the corpus test)."""
    out = render([WARN, DUP], fmt, Style(color=False))
    assert out.index("XCE501") < out.index("XCE302")


def test_problems_sort_by_file_line_column_then_code() -> None:
    problems = Problems()
    for p in (
        Problem("XCE302", "b", where=Where("b.yaml", line=2, column=1)),
        Problem("XCE101", "a2", where=Where("a.yaml", line=10, column=1)),
        Problem("XCE301", "a1b", where=Where("a.yaml", line=2, column=5)),
        Problem("XCE102", "a1a", where=Where("a.yaml", line=2, column=5)),
        Problem("XCE105", "site", subject="site"),
    ):
        problems.add(p)
    assert [p.message for p in problems.sorted()] == ["site", "a1a", "a1b", "a2", "b"]
