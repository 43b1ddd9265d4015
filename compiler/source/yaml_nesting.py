"""How deeply a YAML text nests, measured before any parser builds it.

The C parser's composer recurses once per level: some 25,000 ``[`` overflow the C stack
and kill the process (SIGSEGV), where no ``except`` can help. So every text is measured
first, in two steps:

1. A bound from C-speed regular expressions, enough for nearly every real file. Block
   collections start at a column past their parent's (an indentless ``- `` list shares its
   mapping's), so a line's leading run of blanks and ``-``/``?``/``:`` indicators bounds
   the block depth. Flow collections are bounded by removing the innermost simple
   ``[...]``/``{...}`` (plain words, quoted strings where a token starts, nothing that could
   hide a bracket) a few times over: if no ``[`` or ``{`` is left where one could open a
   collection, nothing nests deeper. Brackets in comments, strings and hostlists
   (``cn[01-04]``) are at most counted, never trusted to close anything.
2. Only where the bound is over the limit: the exact depth, from the tokens of ruamel's
   pure-Python scanner (a loop, no recursion), stopping at the first level too deep. That
   scanner also knows which quotes, comments and block scalars are text.

Depth counts collections the way the composer nests them: a ``- `` list directly under a
mapping key and the one-pair mapping of ``[a: b]`` are levels of their own.

What only the loaded document shows (aliases that nest deeper than the text, cycles,
"billion laughs") is found by ``shape_trouble``, one walk for data and composed nodes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml import tokens as tk
from ruamel.yaml.error import YAMLError

MAX_DEPTH = 64  # the language nests about six levels; provider params get the rest
MAX_VALUES = 5_000_000  # values once aliases are expanded ("billion laughs" stop here)
_FLOW_PASSES = 3  # nested simple flow collections the quick bound unwraps

# A '[' or '{' where a flow collection can open: at the start, after a blank, a line break,
# a BOM or another indicator. Anywhere else (``cn[01-04]``) it is text in a plain scalar,
# or the parser stops there with an error before it nests.
_OPENER = re.compile(r"[\[{](?<![^\s\[{,:?\-\ufeff].)")
_QUOTED = r"""(?:"(?:[^"\\\n]|\\.)*+"|'[^'\n]*+')"""
# The innermost simple flow collection: plain text with no bracket, quote or '#', where a
# quoted string may stand only where a token starts (after the opener, ',' or ': '), so
# that its closing bracket is the collection's own.
_SIMPLE_FLOW = re.compile(
    r"[\[{](?<![^\s\[{,:?\-\ufeff].)\s*+" + _QUOTED + r"?+"
    r"(?:[^\[\]{}\"'#,:]++|:(?!\s)|(?:,|:\s)\s*+" + _QUOTED + r"?+)*+"
    r"[\]}]"
)
_INDICATORS = "[ \t\\-?:\ufeff]"
_LONE_CR = re.compile("\r(?!\n)")


class TooDeep(YAMLError):
    """A text nests deeper than MAX_DEPTH; ``line`` and ``column`` are 0-based."""

    def __init__(self, line: int, column: int) -> None:
        super().__init__(f"nests more than {MAX_DEPTH} levels deep")
        self.line = line
        self.column = column


def check_nesting(text: str) -> None:
    """Raise ``TooDeep`` where ``text`` first nests deeper than MAX_DEPTH (or the scanner's
    error where it cannot be read); return when no parser can be led deeper."""
    if not _surely_shallow(text):
        _exact_depth(text)


def _flow_depth_bound(text: str) -> int | None:
    """Levels of simple flow collections to unwrap before no opener is left, or None."""
    if "[" not in text and "{" not in text:
        return 0
    for passes in range(_FLOW_PASSES + 1):
        if _OPENER.search(text) is None:
            return passes
        text, found = _SIMPLE_FLOW.subn("x", text)
        if not found:
            return None
    return None


def _surely_shallow(text: str) -> bool:
    """A sound bound: block depth is at most 2 x (the longest leading run + 1), and each
    flow level at most 2 (a flow sequence may hold one-pair mappings)."""
    flow = _flow_depth_bound(text)
    if flow is None or _other_line_breaks(text):
        return False
    longest = (MAX_DEPTH - 2 * flow) // 2 - 1  # the longest leading run allowed
    run = f"{_INDICATORS}{{{longest + 1}}}"
    return re.match(run, text) is None and re.search("\n" + run, text) is None


def _other_line_breaks(text: str) -> bool:
    """Line breaks besides '\n' that YAML also reads as one: a lone CR, NEL, LS, PS."""
    if "\x85" in text or "\u2028" in text or "\u2029" in text:
        return True
    return "\r" in text and _LONE_CR.search(text) is not None


_OPENS = {
    tk.BlockMappingStartToken: "map",
    tk.BlockSequenceStartToken: "seq",
    tk.FlowMappingStartToken: "{",
    tk.FlowSequenceStartToken: "[",
}
_CLOSES = (tk.BlockEndToken, tk.FlowMappingEndToken, tk.FlowSequenceEndToken)
_PAIR_ENDS = (tk.FlowEntryToken, tk.FlowSequenceEndToken)
_LIST_ENDS = (tk.KeyToken, tk.ValueToken, tk.BlockEndToken)


def _exact_depth(text: str) -> None:
    """The composer's depth, token by token: block and flow collections, a ``- `` list
    right under a mapping key ("-"), a one-pair mapping inside ``[...]`` (":")."""
    stack: list[str] = []
    for token in YAML(typ="safe", pure=True).scan(text):
        _track(stack, type(token))
        if len(stack) > MAX_DEPTH:
            mark = token.start_mark
            raise TooDeep(mark.line, mark.column)


def _track(stack: list[str], kind: type) -> None:
    """One token on the stack of open collections: it first ends the implicit ones it ends
    (a "-" list, a ":" pair), then opens or closes one of its own."""
    if (_top(stack) == "-" and kind in _LIST_ENDS) or (_top(stack) == ":" and kind in _PAIR_ENDS):
        stack.pop()
    top = _top(stack)
    if kind in _OPENS:
        stack.append(_OPENS[kind])
    elif kind is tk.BlockEntryToken and top == "map":
        stack.append("-")
    elif kind in (tk.KeyToken, tk.ValueToken) and top == "[":
        stack.append(":")
    elif kind in _CLOSES and stack:
        stack.pop()


def _top(stack: list[str]) -> str:
    return stack[-1] if stack else ""


@dataclass(frozen=True, slots=True)
class Trouble:
    """Why a loaded document cannot be walked safely, the container where it shows and,
    for a cycle, the container the alias names."""

    reason: str
    at: Any
    target: Any = None


def shape_trouble(
    root: Any, containers: tuple[type, ...], children: Callable[[Any], Sequence[Any]]
) -> Trouble | None:
    """Aliases make a document a graph: a cycle (``&a [*a]``) would send every later walk
    round forever, nested aliases can stand for billions of values, and aliases can nest
    deeper than the text does. Each container is measured once, without recursion; the
    same walk serves loaded data (no marks) and composed nodes (with marks)."""
    measured: dict[int, tuple[int, int]] = {}  # id -> (values once expanded, depth)
    open_ids: set[int] = set()  # the containers being measured: the current path
    stack: list[tuple[Any, Any, bool]] = [(root, None, False)]
    while stack:
        node, parent, closing = stack.pop()
        if not isinstance(node, containers):
            continue
        key = id(node)
        if closing:
            open_ids.discard(key)
            size, depth = 1, 1
            for child in children(node):
                s, d = measured.get(id(child), (1, 0))
                size, depth = size + s, max(depth, d + 1)
            if size > MAX_VALUES:
                return Trouble(f"its aliases expand to more than {MAX_VALUES:,} values", node)
            if depth > MAX_DEPTH:
                return Trouble(f"through aliases it nests more than {MAX_DEPTH} levels deep", node)
            measured[key] = (size, depth)
        elif key in open_ids:
            reason = "an alias refers to a mapping or list that contains it (a cycle)"
            return Trouble(reason, parent, node)
        elif key not in measured:
            open_ids.add(key)
            stack.append((node, parent, True))
            stack.extend((child, node, False) for child in children(node))
    return None
