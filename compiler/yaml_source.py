"""Reading YAML fast, and finding lines only where a problem needs them.

Every file is loaded with ruamel.yaml's safe loader on its C parser (no line
information, no round-trip cost), or on its pure parser where the C one fails. Problems
carry a YAML path; ``Locator`` composes only the files that have problems (nodes with
marks) to turn those paths into line and column. Duplicate keys and syntax errors are
found with marks directly.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from compiler.problems import Problem, Problems, Where, YPath

YAML_SUFFIXES = (".yaml", ".yml")
MAX_DEPTH = 64  # the language nests about six levels; provider params get the rest
MAX_VALUES = 5_000_000  # values once aliases are expanded ("billion laughs" stop here)


def _safe_yaml(pure: bool = False) -> YAML:
    y = YAML(typ="safe", pure=pure)
    y.allow_duplicate_keys = False
    return y


def _load(text: str) -> Any:
    """The C parser first (fast); where it fails, the pure one, which also reads the YAML 1.2
    forms libyaml rejects (a ':' inside a flow scalar: ``{token: env:X}``)."""
    try:
        return _safe_yaml().load(text)
    except MarkedYAMLError:
        return _safe_yaml(pure=True).load(text)


def _compose(text: str) -> Node | None:
    """Nodes with marks, by the same two parsers as ``_load``."""
    try:
        node: Node | None = _safe_yaml().compose(text)
    except MarkedYAMLError:
        node = _safe_yaml(pure=True).compose(text)
    return node


@dataclass(frozen=True, slots=True)
class SourceFile:
    """One loaded YAML document: its display path (relative to the site) and its data."""

    path: str
    abspath: Path
    data: Any


def find_yaml_files(root: Path) -> list[Path]:
    """All YAML files below ``root``, sorted, skipping hidden folders (``.git``, ``.xce``)."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            if name.endswith(YAML_SUFFIXES) and not name.startswith("."):
                found.append(Path(dirpath) / name)
    return sorted(found)


def display_path(path: Path) -> str:
    """Paths in messages are relative to where the user ran the command when possible."""
    try:
        return os.path.relpath(path, Path.cwd())
    except ValueError:  # pragma: no cover - other drive on Windows
        return str(path)


def _mark_where(file: str, err: MarkedYAMLError) -> Where:
    mark = err.problem_mark or err.context_mark
    if mark is None:
        return Where(file, line=1, column=1)
    return Where(file, line=mark.line + 1, column=mark.column + 1)


def _duplicate_keys(text: str, file: str) -> list[Problem]:
    """Every duplicate key of a document (the loader stops at the first)."""
    try:
        node = _compose(text)
    except YAMLError:
        return []
    out: list[Problem] = []
    for mapping in _mappings(node):
        seen: dict[Any, ScalarNode] = {}
        for knode, _ in mapping.value:
            if not isinstance(knode, ScalarNode):
                continue
            if knode.value in seen:
                first = seen[knode.value]
                out.append(
                    Problem(
                        "XCE002",
                        f"duplicate key '{knode.value}' in the same mapping",
                        "remove one of them or merge their contents; YAML keeps only one",
                        Where(
                            file, line=knode.start_mark.line + 1, column=knode.start_mark.column + 1
                        ),
                        also=(
                            Where(
                                file,
                                line=first.start_mark.line + 1,
                                column=first.start_mark.column + 1,
                            ),
                        ),
                    )
                )
            else:
                seen[knode.value] = knode
    return out


def _mappings(node: Node | None) -> Iterator[MappingNode]:
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, MappingNode):
            yield n
            for k, v in n.value:
                stack.extend((k, v))
        elif isinstance(n, SequenceNode):
            stack.extend(n.value)


def load_file(path: Path, shown: str, problems: Problems) -> SourceFile | None:
    """Load one file; on failure report where and return None."""
    try:
        data = path.read_bytes()
    except OSError as err:
        problems.error("XCE006", f"cannot read file: {err.strerror}", "", Where(shown))
        return None
    return load_bytes(data, shown, problems, path)


def load_bytes(
    data: bytes, shown: str, problems: Problems, path: Path | None = None
) -> SourceFile | None:
    """Load a document from bytes (a file, or a git blob of another revision)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        before = data[: err.start]
        problems.error(
            "XCE001",
            f"file is not valid UTF-8 (byte {err.start})",
            "save the file as UTF-8",
            Where(
                shown,
                line=before.count(b"\n") + 1,
                column=err.start - (before.rfind(b"\n") + 1) + 1,
            ),
        )
        return None
    return load_text(text, shown, problems, path)


def load_text(
    text: str, shown: str, problems: Problems, path: Path | None = None
) -> SourceFile | None:
    """Parse one document; without a path the display path stands in for it."""
    if "\x00" in text:
        problems.error(
            "XCE001",
            "file contains a NUL byte",
            "save it as a text file",
            Where(shown, line=1, column=1),
        )
        return None
    try:
        data = _load(text)
    except MarkedYAMLError as err:
        dups = _duplicate_keys(text, shown)
        if dups:
            problems.extend(dups)
        else:
            what = err.problem or err.context or "invalid YAML"
            start = err.context_mark
            also: list[Where] = []
            end = err.problem_mark
            if err.problem and err.context and start and end and start.line < end.line:
                # The parser notices late (an unclosed '[' at the next item): say where it began.
                what += f" ({err.context} that starts at line {start.line + 1})"
                also.append(Where(shown, line=start.line + 1, column=start.column + 1))
            problems.error(
                "XCE001",
                f"YAML syntax error: {what}",
                "check indentation, quoting and brackets around this place",
                _mark_where(shown, err),
                also=also,
            )
        return None
    except (YAMLError, RecursionError, ValueError, TypeError) as err:
        problems.error(
            "XCE001",
            f"YAML error: {err}",
            "check the file's syntax",
            Where(shown, line=1, column=1),
        )
        return None
    trouble = _shape_trouble(data)
    if trouble is not None:
        problems.error(
            "XCE001",
            f"the document cannot be read: {trouble}",
            "write the values out instead of nesting aliases (*name) or lists this deep",
            Where(shown, line=1, column=1),
        )
        return None
    return SourceFile(shown, path or Path(shown), data)


def _shape_trouble(data: Any) -> str | None:
    """Why a loaded document cannot be walked safely, or None.

    Aliases make the data a graph: a cycle (``&a [*a]``) would send every later walk round
    forever, and nested aliases can stand for billions of values; very deep nesting
    overflows recursive readers (validation, messages, JSON). Each container is measured
    once, without recursion.
    """
    measured: dict[int, tuple[int, int]] = {}  # id -> (values once expanded, depth)
    open_ids: set[int] = set()  # the containers being measured: the current path
    stack: list[tuple[Any, bool]] = [(data, False)]
    while stack:
        node, closing = stack.pop()
        if not isinstance(node, dict | list):
            continue
        key = id(node)
        children = list(node.values()) if isinstance(node, dict) else node
        if closing:
            open_ids.discard(key)
            size, depth = 1, 1
            for child in children:
                s, d = measured.get(id(child), (1, 0))
                size, depth = size + s, max(depth, d + 1)
            if size > MAX_VALUES:
                return f"its aliases expand to more than {MAX_VALUES:,} values"
            if depth > MAX_DEPTH:
                return f"it nests more than {MAX_DEPTH} levels deep"
            measured[key] = (size, depth)
        elif key in open_ids:
            return "an alias refers to a mapping or list that contains it (a cycle)"
        elif key not in measured:
            open_ids.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in children)
    return None


class Locator:
    """Resolves ``Where.ypath`` to line and column by composing only the files that need it."""

    def __init__(
        self, files: Iterable[SourceFile] = (), texts: Mapping[str, str] | None = None
    ) -> None:
        """``texts`` holds documents that are not files on disk (git blobs), by display path."""
        self._paths: dict[str, Path] = {f.path: f.abspath for f in files}
        self._texts: dict[str, str] = dict(texts or {})
        self._nodes: dict[str, Node | None] = {}

    def _root(self, file: str) -> Node | None:
        if file not in self._nodes:
            path = self._paths.get(file)
            node: Node | None = None
            try:
                text = self._texts.get(file)
                if text is None and path is not None:
                    text = path.read_text(encoding="utf-8")
                node = _compose(text) if text is not None else None
            except (OSError, YAMLError, UnicodeDecodeError):
                node = None
            self._nodes[file] = node
        return self._nodes[file]

    def locate(self, where: Where) -> Where:
        if where.line is not None:
            return where
        node = self._root(where.file)
        if node is None:
            return replace(where, line=1, column=1)
        target, key_node = _walk(node, where.ypath)
        chosen = key_node if (where.key and key_node is not None) else target
        mark = chosen.start_mark
        return replace(where, line=mark.line + 1, column=mark.column + 1)

    def locate_all(self, problems: Iterable[Problem]) -> list[Problem]:
        out = []
        for p in problems:
            where = self.locate(p.where) if p.where is not None else None
            also = tuple(self.locate(w) for w in p.also)
            out.append(replace(p, where=where, also=also))
        return sorted(out, key=Problem.sort_key)


def _walk(node: Node, ypath: YPath) -> tuple[Node, Node | None]:
    """Follow a YAML path as far as it exists; return the deepest node and its key node."""
    key_node: Node | None = None
    for part in ypath:
        if isinstance(node, MappingNode):
            for k, v in node.value:
                if isinstance(k, ScalarNode) and str(k.value) == str(part):
                    key_node, node = k, v
                    break
            else:
                return node, key_node
        elif (
            isinstance(node, SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value)
        ):
            key_node, node = None, node.value[part]
        else:
            return node, key_node
    return node, key_node
