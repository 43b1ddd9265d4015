"""Every problem code is a named constant, defined once: no ``"XCEnnn"`` is written anywhere
else in compiler/ or reconciler/. Docs may name codes for the reader: docstrings, comments,
and a pydantic field's ``description=`` (the JSON Schema that editors show).

A code is defined by a module-level ``NAME = "XCEnnn"`` in its area's table (e.g.
compiler/core/codes.py, reconciler/apply/codes.py); everything else refers to the name, so a
code cannot drift between two copies, and its default hint sits beside it.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = re.compile(r"XCE\d{3}")
TABLE_ROW = re.compile(r"^\| `?(XCE\d{3})`? \|", re.MULTILINE)  # a code docs/errors.md explains


@dataclass
class Scan:
    """What the source says about codes: their definitions, and every other literal."""

    definitions: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    strays: list[str] = field(default_factory=list)
    names_used: set[str] = field(default_factory=set)

    def add(self, source: str, shown: str) -> None:
        tree = ast.parse(source)
        defining = set()
        for node in tree.body:
            target = _definition(node)
            if target is not None:
                assert isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                defining.add(id(node.value))
                self.definitions[node.value.value].append(f"{shown}:{node.lineno} {target}")
        docs = _docs(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and CODE.search(node.value) and id(node) not in defining
                    and id(node) not in docs):
                self.strays.append(f"{shown}:{node.lineno}: {node.value[:60]!r}")
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                self.names_used.add(node.id)
            elif isinstance(node, ast.Attribute):
                self.names_used.add(node.attr)
            elif isinstance(node, ast.alias):
                self.names_used.add(node.name)


def _definition(node: ast.stmt) -> str | None:
    """The constant's name if ``node`` is ``NAME = "XCEnnn"`` (the whole value a code)."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name) and node.targets[0].id.isupper()):
        return None
    value = node.value
    if isinstance(value, ast.Constant) and isinstance(value.value, str) \
            and CODE.fullmatch(value.value):
        return node.targets[0].id
    return None


def _docs(tree: ast.Module) -> set[int]:
    """The string constants that are documentation: docstrings and ``description=`` values."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
        elif isinstance(node, ast.keyword) and node.arg == "description":
            found.update(id(n) for n in ast.walk(node.value) if isinstance(n, ast.Constant))
    return found


def _scan_tree() -> Scan:
    scan = Scan()
    for folder in ("compiler", "reconciler"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            scan.add(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    return scan


def test_no_code_is_written_outside_its_definition() -> None:
    scan = _scan_tree()
    assert len(scan.definitions) > 100, "the definitions were not found: the pattern is wrong"
    strays = scan.strays
    assert not strays, "codes written as literals; use the constant of the code's table " \
        "(or define it there):\n" + "\n".join(strays)


def test_each_code_is_defined_once() -> None:
    twice = {code: where for code, where in _scan_tree().definitions.items() if len(where) > 1}
    assert not twice, f"codes defined more than once: {twice}"


def test_each_defined_code_is_used() -> None:
    scan = _scan_tree()
    unused = [where for places in scan.definitions.values() for where in places
              if where.rsplit(" ", 1)[1] not in scan.names_used]
    assert not unused, f"codes defined but never used: {unused}"


def test_every_documented_code_is_defined() -> None:
    """The other half of tests/test_docs.py: docs/errors.md names no code the source lacks."""
    documented = set(TABLE_ROW.findall((ROOT / "docs" / "errors.md").read_text(encoding="utf-8")))
    assert len(documented) > 100, "no table rows found: the pattern is wrong"
    missing = sorted(documented - set(_scan_tree().definitions))
    assert not missing, f"documented in docs/errors.md but defined nowhere: {missing}"


SAMPLE = '''
"""A module that names XCE101 in its docstring: allowed."""
from compiler.core.problems import Problem
UNKNOWN_KEY = "XCE101"  # the one definition
# a comment may say XCE102
lowercase = "XCE103"
TWO = ("XCE104", "XCE105")
HINTS = {"XCE106": "a hint keyed by a literal"}

class Parser:
    """XCE107 here is a docstring."""
    usage_code = "XCE108"

def make(code: str = UNKNOWN_KEY) -> Problem:
    """Docstring naming XCE109."""
    if code == "XCE110":
        return Problem("XCE111", f"see XCE112 for {code}")
    return Problem(code, "message", description="the schema's text may name XCE113")
'''


def test_the_scan_finds_each_form_of_an_inline_code() -> None:
    """Proves the check can fail: every literal but the definition is caught, whatever its
    form; docstrings, comments and descriptions are not."""
    scan = Scan()
    scan.add(SAMPLE, "sample.py")
    assert dict(scan.definitions) == {"XCE101": ["sample.py:4 UNKNOWN_KEY"]}
    caught = sorted({c for stray in scan.strays for c in CODE.findall(stray)})
    assert caught == ["XCE103", "XCE104", "XCE105", "XCE106", "XCE108", "XCE110", "XCE111",
                      "XCE112"]
    assert "UNKNOWN_KEY" in scan.names_used


def test_a_second_definition_is_caught() -> None:
    scan = Scan()
    scan.add('A = "XCE701"\n', "a.py")
    scan.add('B = "XCE701"\n', "b.py")
    assert scan.definitions["XCE701"] == ["a.py:1 A", "b.py:1 B"]
