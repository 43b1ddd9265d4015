"""No function in compiler/ or reconciler/ is over 60 lines or above cyclomatic complexity 15.

Near a cap, a rule shapes the code: a function kept under 60 lines by packing its lines (long
calls, dense comprehensions) is no easier to read. The way under both caps is to name the
steps: a helper named for what it does, beside its caller.

A function's length runs from its ``def`` line to its last line (decorators excluded). Its
complexity is counted the way radon (``radon cc``) counts it, so the figure here is the one a
reader's tools show: 1, plus one for each ``if``/``elif`` and conditional expression, each
``for``/``while`` (and one more for its ``else``), each ``except`` handler and a ``try``'s
``else``, each extra operand of ``and``/``or``, each comprehension's ``for`` and ``if``, each
``assert``, and each ``case`` of a ``match`` but a final catch-all. A nested function or class
counts on its own, not in the function around it; a lambda's body counts in it. (Ruff's C901,
in the lint step, counts less: it finds nothing this test does not.)
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("compiler", "reconciler")
MAX_LINES = 60
MAX_COMPLEXITY = 15

Function = ast.FunctionDef | ast.AsyncFunctionDef
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _catch_all(case: ast.match_case) -> bool:
    """``case _:`` or ``case name:``: the match's else, which adds no path of its own."""
    return isinstance(case.pattern, ast.MatchAs) and case.pattern.pattern is None


def _decisions(node: ast.AST) -> int:
    """The decision points this one node adds (its children are counted by the caller)."""
    if isinstance(node, ast.Try):
        return len(node.handlers) + bool(node.orelse)
    if isinstance(node, ast.BoolOp):
        return len(node.values) - 1
    if isinstance(node, ast.If | ast.IfExp):
        return 1
    if isinstance(node, ast.Match):
        return max(0, len(node.cases) - any(_catch_all(case) for case in node.cases))
    if isinstance(node, ast.For | ast.AsyncFor | ast.While):
        return 1 + bool(node.orelse)
    if isinstance(node, ast.comprehension):
        return 1 + len(node.ifs)
    return 0


def _count(node: ast.AST) -> int:
    """The decision points in ``node`` and below it, leaving nested functions and classes out.

    An ``assert`` counts one and nothing inside it, as in radon.
    """
    if isinstance(node, _NESTED):
        return 0
    if isinstance(node, ast.Assert):
        return 1
    return _decisions(node) + sum(_count(child) for child in ast.iter_child_nodes(node))


def complexity(function: Function) -> int:
    """Cyclomatic complexity of ``function``'s body, as radon counts it."""
    return 1 + sum(_count(statement) for statement in function.body)


def length(function: Function) -> int:
    """Lines from the ``def`` line to the last line of the body."""
    assert function.end_lineno is not None
    return function.end_lineno - function.lineno + 1


def _functions() -> Iterator[tuple[str, Function]]:
    """Every function and method in the two packages, nested ones too, with ``file:line name``."""
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            shown = path.relative_to(ROOT).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, Function):
                    yield f"{shown}:{node.lineno} {node.name}", node


def test_no_function_over_60_lines() -> None:
    long = [f"{where}: {length(node)} lines"
            for where, node in _functions() if length(node) > MAX_LINES]
    assert not long, (f"over {MAX_LINES} lines, name the steps (helpers named for what they "
                      "do, not packed lines):\n" + "\n".join(long))


def test_no_function_above_complexity_15() -> None:
    tangled = [f"{where}: cyclomatic {complexity(node)}"
               for where, node in _functions() if complexity(node) > MAX_COMPLEXITY]
    assert not tangled, (f"above cyclomatic {MAX_COMPLEXITY} (radon's count), name the steps "
                         "(helpers named for what they do):\n" + "\n".join(tangled))


def _figures(source: str) -> dict[str, int]:
    tree = ast.parse(textwrap.dedent(source))
    return {node.name: complexity(node) for node in ast.walk(tree) if isinstance(node, Function)}


@pytest.mark.parametrize(("source", "expected"), [
    pytest.param("""
        def f(xs, a, b):
            for x in xs:
                if a and b or x:
                    continue
                elif x > 1:
                    break
            else:
                pass
            while a:
                a -= 1
            return [y for y in xs if y if not y] or (1 if a else 2)
        """, {"f": 13}, id="branches, loops with else, boolean operands, comprehensions"),
    pytest.param("""
        def f(x):
            try:
                x()
            except ValueError:
                pass
            except (KeyError, OSError):
                pass
            else:
                pass
            finally:
                pass
            with open(x) as handle:
                handle.read()
            assert x and x, "an assert counts once, whatever is inside it"
            return lambda y: y if y else x
        """, {"f": 6}, id="handlers, try's else, assert, a lambda's body; with and finally not"),
    pytest.param("""
        def f(x):
            match x:
                case 1:
                    pass
                case [a, *rest] if a:
                    pass
                case _:
                    pass
            match x:
                case 1 | 2:
                    pass
            return x
        """, {"f": 4}, id="each case but a final catch-all"),
    pytest.param("""
        @decorator(a if b else c)
        def outer(x=1 if y else 2):
            def inner(z):
                return z or x
            class Local:
                def method(self):
                    return [v for v in self]
            return inner if x else Local
        """, {"outer": 2, "inner": 2, "method": 2},
        id="nested functions and classes count on their own; decorators and defaults not"),
])
def test_counted_as_radon_counts(source: str, expected: dict[str, int]) -> None:
    assert _figures(source) == expected
