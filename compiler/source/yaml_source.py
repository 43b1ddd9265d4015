"""Reading YAML fast, and finding lines only where a problem needs them.

Every file is loaded as YAML 1.2's core schema (``compiler.source.yaml12``) on ruamel.yaml's C
parser (no line information, no round-trip cost), or on its pure parser where the C one
fails; before either sees a text, ``check_nesting`` makes sure it cannot lead them too
deep, and ``check_directives`` that it declares no other YAML version. Problems
carry a YAML path; ``Locator`` composes only the files that have problems (nodes with
marks) to turn those paths into line and column. Duplicate keys and syntax errors are
found with marks directly.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from compiler.core import codes
from compiler.core.file_io import SITE_FILE_CAP, Refused, read_input
from compiler.core.problems import Problem, Problems, UserError, Where, YPath
from compiler.source.yaml12 import YamlRefused, check_directives, reader
from compiler.source.yaml_nesting import MAX_DEPTH, TooDeep, Trouble, check_nesting, shape_trouble

YAML_SUFFIXES = (".yaml", ".yml")
# a folder of this name directly in a site folder holds the site's policies, not site-config
# files (docs/policies.md "Where the policies come from")
SITE_POLICIES = "policies"


def _load(text: str) -> Any:
    """The C parser first (fast); where it fails, the pure one, which also reads the YAML 1.2
    forms libyaml rejects (a ':' inside a flow scalar: ``{token: env:X}``). Neither sees a
    text that nests too deep (``TooDeep``): the C one would crash the process. What the
    language refuses (``YamlRefused``) is refused by both alike: no second try."""
    check_nesting(text)
    check_directives(text)
    try:
        return reader().load(text)
    except YamlRefused:
        raise
    except MarkedYAMLError:
        return reader(pure=True).load(text)


def _compose(text: str) -> Node | None:
    """Nodes with marks, by the same two parsers as ``_load``, after the same checks."""
    check_nesting(text)
    check_directives(text)
    try:
        node: Node | None = reader().compose(text)
    except MarkedYAMLError:
        node = reader(pure=True).compose(text)
    return node


@dataclass(frozen=True, slots=True)
class SourceFile:
    """One loaded YAML document: its display path (relative to the site) and its data."""

    path: str
    abspath: Path
    data: Any


VENV_MARKER = "pyvenv.cfg"  # the file that makes a folder a Python virtualenv


def not_site_config(name: str, top: bool, holds: Callable[[str], bool],
                    skip: str | None = SITE_POLICIES) -> bool:
    """Folders that are never site-config: hidden ones (``.git``, ``.xce``), the site's own
    ``policies/`` (``skip``, directly in the site folder: ``top``), and a Python virtualenv
    (``holds(VENV_MARKER)``), which an admin may well create in the site repository to
    install xce-gitops and which holds other projects' YAML. One rule for a folder on disk
    and a tree of a git revision (compiler.source.git_tree.yaml_blobs)."""
    return name.startswith(".") or (top and name == skip) or holds(VENV_MARKER)


def is_yaml_name(name: str) -> bool:
    """A file the loaders read: YAML by its suffix, and not hidden."""
    return name.endswith(YAML_SUFFIXES) and not name.startswith(".")


def _holds(folder: str) -> Callable[[str], bool]:
    return lambda name: os.path.exists(os.path.join(folder, name))


def find_yaml_files(root: Path, problems: Problems | None = None) -> list[Path]:
    """All YAML files below ``root``, sorted, skipping the folders that are never
    site-config (``not_site_config``). A folder that cannot be listed is an error
    (``unlisted``), never an absence: its files would drop out of the desired state. Each
    goes to ``problems``; without it, the first raises UserError."""
    found: list[Path] = []
    unlisted: list[Problem] = []
    stack = [(root, True)]
    while stack:
        folder, top = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError as err:
            unlisted.append(_unlisted(folder, err))
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):  # a link to a folder is not followed
                if not not_site_config(entry.name, top, _holds(entry.path)):
                    stack.append((Path(entry.path), False))
            elif is_yaml_name(entry.name):  # whatever it is: reading it says what is wrong
                found.append(Path(entry.path))
    if problems is not None:
        problems.extend(unlisted)
    elif unlisted:
        raise UserError(unlisted)
    return sorted(found)


def _unlisted(folder: Path, err: OSError) -> Problem:
    return Problem(codes.CANNOT_READ, f"cannot list this folder: {err.strerror or err}",
                   "let the user who runs the command read and enter it (chmod a+rx), or move "
                   "its files elsewhere: what it holds would otherwise be left out",
                   subject=display_path(folder))


def display_path(path: Path) -> str:
    """Paths in messages are relative to where the user ran the command when possible. A
    name that is not UTF-8 shows its other bytes as ``\\xff``: text every output can hold
    (JSON cannot hold the lone surrogates Python reads such bytes as)."""
    try:
        shown = os.path.relpath(path, Path.cwd())
    except (ValueError, OSError):  # other drive on Windows; a folder that is gone
        shown = str(path)
    if shown.isascii():
        return shown
    return os.fsencode(shown).decode("utf-8", "backslashreplace")


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
                        codes.DUPLICATE_KEY,
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
    """Every mapping of a composed document once: an alias is the node it names, so a
    document that aliases an ancestor is a cycle, and one whose aliases nest is a bomb."""
    stack = [node]
    seen: set[int] = set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, MappingNode):
            yield n
            for k, v in n.value:
                stack.extend((k, v))
        elif isinstance(n, SequenceNode):
            stack.extend(n.value)


def read_file(path: Path, shown: str, problems: Problems) -> bytes | None:
    """A site or policy file's bytes (``read_input``: never waits on a FIFO, refuses a
    device, bounded); on failure report where and return None."""
    try:
        return read_input(path, SITE_FILE_CAP, shown)
    except Refused as err:
        problems.add(err.problem)
    except OSError as err:
        problems.error(codes.CANNOT_READ, f"cannot read file: {err.strerror}", "", Where(shown))
    return None


def load_file(path: Path, shown: str, problems: Problems) -> SourceFile | None:
    """Load one file; on failure report where and return None."""
    data = read_file(path, shown, problems)
    return None if data is None else load_bytes(data, shown, problems, path)


def load_bytes(
    data: bytes, shown: str, problems: Problems, path: Path | None = None
) -> SourceFile | None:
    """Load a document from bytes (a file, or a git blob of another revision)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        before = data[: err.start]
        problems.error(
            codes.NOT_YAML,
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
            codes.NOT_YAML,
            "file contains a NUL byte",
            "save it as a text file",
            Where(shown, line=1, column=1),
        )
        return None
    try:
        data = _load(text)
    except TooDeep as err:
        problems.error(
            codes.NOT_YAML,
            f"YAML nests more than {MAX_DEPTH} levels deep here",
            "the language needs a few levels; write this value out flatter",
            Where(shown, line=err.line + 1, column=err.column + 1),
        )
        return None
    except YamlRefused as err:
        problems.error(err.code, err.message, err.hint, _mark_where(shown, err))
        return None
    except MarkedYAMLError as err:
        problems.extend(_duplicate_keys(text, shown) or [_syntax_problem(err, shown, text)])
        return None
    except (YAMLError, RecursionError, ValueError, TypeError) as err:
        problems.error(
            codes.NOT_YAML,
            f"YAML error: {err}",
            "check the file's syntax",
            Where(shown, line=1, column=1),
        )
        return None
    trouble = shape_trouble(data, (dict, list), _data_children)
    if trouble is not None:
        problems.add(_shape_problem(trouble.reason, text, shown))
        return None
    if _SURROGATE_ESCAPE.search(text) and _holds_surrogate(data):
        problems.add(_surrogate_problem(text, shown))
        return None
    return SourceFile(shown, path or Path(shown), data)


# A lone surrogate can enter a document only through an escape of a double-quoted scalar.
_SURROGATE_ESCAPE = re.compile(r"\\(?:u[dD][89a-fA-F]|U0000[dD][89a-fA-F])")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _holds_surrogate(data: Any) -> bool:
    """A key or value with a lone surrogate (``"\\ud800"``): not a character, so no output
    (UTF-8 JSON, the terminal) could hold it."""
    stack = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if _SURROGATE.search(node):
                return True
        elif isinstance(node, dict):
            stack.extend(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def _surrogate_problem(text: str, shown: str) -> Problem:
    where = Where(shown, line=1, column=1)
    with contextlib.suppress(YAMLError):
        stack = [_compose(text)]
        while stack:
            node = stack.pop()
            if isinstance(node, ScalarNode) and _SURROGATE.search(str(node.value)):
                mark = node.start_mark
                where = Where(shown, line=mark.line + 1, column=mark.column + 1)
                break
            if isinstance(node, MappingNode | SequenceNode):
                stack.extend(reversed(_node_children(node)))
    return Problem(
        codes.NOT_YAML,
        "a \\u escape writes a lone surrogate (U+D800 to U+DFFF), which is not a character",
        "write the character itself, or as one escape: \\U0001F600 rather than \\ud83d\\ude00",
        where,
    )


def _syntax_problem(err: MarkedYAMLError, shown: str, text: str) -> Problem:
    """A syntax error in words: what the parser's complaint means here and how to fix it
    (``_explained``), at the place to fix; the parser's own text only where no case fits."""
    mark = err.problem_mark or err.context_mark
    found = _explained(err, text.splitlines()) if mark is not None else None
    if found is not None:
        return Problem(
            codes.NOT_YAML,
            f"YAML syntax error: {found.message}",
            found.hint,
            Where(shown, line=found.line + 1, column=found.column + 1),
            also=tuple(Where(shown, line=line + 1, column=col + 1) for line, col in found.also),
        )
    what = err.problem or err.context or "invalid YAML"
    start = err.context_mark
    also: list[Where] = []
    end = err.problem_mark
    if err.problem and err.context and start and end and start.line < end.line:
        # The parser notices late (an unclosed '[' at the next item): say where it began.
        what += f" ({err.context} that starts at line {start.line + 1})"
        also.append(Where(shown, line=start.line + 1, column=start.column + 1))
    return Problem(
        codes.NOT_YAML,
        f"YAML syntax error: {what}",
        "check indentation, quoting and brackets around this place",
        _mark_where(shown, err),
        also=tuple(also),
    )


@dataclass(frozen=True, slots=True)
class _Explained:
    """A syntax error said plainly, at a 0-based line and column."""

    message: str
    hint: str
    line: int
    column: int
    also: tuple[tuple[int, int], ...] = ()


_TAB_HINT = "indent with spaces only (set the editor to insert spaces for the Tab key)"
_INDENT_HINT = (
    "indent with spaces so that the keys of one mapping, and the '-' of one list, start in "
    "the same column; a value that belongs under a key goes further in than that key"
)
# A key with its value glued to the ':' (``name:t``): YAML reads the whole as text.
_GLUED = re.compile(r"^(\s*(?:- )?)([A-Za-z0-9_][A-Za-z0-9_.-]*):([^\s:/].*)$")
_KEY = re.compile(r"^\s*(?:- )?[^\s#'\"\[{][^#]*?:(?:\s|$)")


def _explained(err: MarkedYAMLError, lines: list[str]) -> _Explained | None:
    """The usual mistakes, recognised by the parser's complaint and the text around it."""
    problem, context = err.problem or "", err.context or ""
    mark = err.problem_mark or err.context_mark
    line, col = mark.line, mark.column
    start = err.context_mark
    text = lines[line] if line < len(lines) else ""
    indent = text[: len(text) - len(text.lstrip())]
    if "\t" in indent or "'\\t'" in problem:
        tab = text.find("\t")
        return _Explained("a tab indents this line, and YAML forbids tabs for indentation",
                          _TAB_HINT, line, max(tab, 0))
    if "quoted scalar" in context and start is not None:
        return _Explained(
            f"the quote ({lines[start.line][start.column]}) that starts here is never closed",
            "close the quote where the value ends; inside \"…\" write \\\" for a quote, "
            "inside '…' write ''",
            start.line, start.column, ((line, col),),
        )
    return _by_complaint(problem, context, start, lines, line, col)


def _by_complaint(problem: str, context: str, start: Any, lines: list[str], line: int,
                  col: int) -> _Explained | None:
    """The mistakes that the parser's complaint names."""
    if problem.startswith("expected ','"):
        return _flow(problem, context, start, line, col)
    if problem == "mapping values are not allowed here":
        return _colon(lines, line, col)
    if problem == "could not find expected ':'" and start is not None:
        return _keyless(lines, start.line, line, col)
    if problem.startswith("expected <block end>") or "expected key" in problem:
        return _indentation(problem, context, start, line, col)
    if "cannot start any token" in problem:
        return _unquoted_start(lines, line, col)
    return None


def _unquoted_start(lines: list[str], line: int, col: int) -> _Explained:
    """A plain value that starts with a character YAML reserves (``@``, a backquote)."""
    text = lines[line] if line < len(lines) else ""
    char = text[col] if col < len(text) else "?"
    return _Explained(f"a value cannot start with {char!r} unless it is quoted",
                      f"quote the value: '{text[col:].strip()}'", line, col)


def _flow(problem: str, context: str, start: Any, line: int, col: int) -> _Explained:
    """A ``[`` or ``{`` that runs on into the next line's item, or a ``:`` inside one."""
    closer = "]" if "]" in problem else "}"
    opener = "[" if closer == "]" else "{"
    if "<stream end>" in problem:  # the file ends inside it (cut short, or never closed)
        at = () if start is None else ((start.line, start.column),)
        return _Explained(f"the file ends inside a '{opener}' that is never closed",
                          f"close it with '{closer}'; if the file was cut short, restore it",
                          line, col, at)
    if start is not None and start.line < line:
        return _Explained(
            f"the '{opener}' that starts at line {start.line + 1} is not closed before this",
            f"close it with '{closer}' on its own line's end; quote a value that holds "
            f"'{opener}' as text",
            line, col, ((start.line, start.column),),
        )
    return _Explained(
        f"an item inside '{opener} {closer}' holds an unquoted ':' (or '{opener}')",
        "quote values that contain ': ' (or the brackets): [\"a: b\"], or write the "
        "list or mapping one item per line",
        line, col,
    )


def _colon(lines: list[str], line: int, col: int) -> _Explained:
    """``mapping values are not allowed here``: a ': ' inside a plain value, a key whose
    ':' lacks its space on the line before, or a line indented under a plain value."""
    text = lines[line]
    key_end = text.find(": ")
    if 0 <= key_end < col - 1:
        key, value = text[:key_end].strip(), text[key_end + 2:].strip()
        return _Explained(
            "this value holds ': ', which YAML reads as the start of another key",
            f"quote values that contain ': ': {key}: \"{value}\"" if len(value) < 60 else
            "quote values that contain ': ' (\"…\")",
            line, col,
        )
    above = line - 1
    while above >= 0 and not lines[above].strip():
        above -= 1
    keyless = _keyless(lines, above, line, col) if above >= 0 else None
    if keyless is not None:
        return keyless
    return _Explained(
        f"this line is indented further than the key on line {above + 1}, so YAML reads "
        "it as the rest of that key's value",
        _INDENT_HINT, line, col, ((above, 0),) if above >= 0 else (),
    )


def _keyless(lines: list[str], at: int, line: int, col: int) -> _Explained | None:
    """Line ``at`` (0-based) holds no key where one was due: ``name:t`` glued, or no ':'
    at all; the parser noticed at ``line``, ``col``, named under ``also``."""
    glued = _GLUED.match(lines[at])
    if glued is not None:
        lead, key, value = glued.groups()
        return _Explained(
            f"'{key}:{value}' has no space after ':', so YAML reads it as text, not as a key "
            "and its value",
            f"write a space after the colon: {key}: {value}",
            at, len(lead) + len(key) + 1, ((line, col),),
        )
    if not _KEY.match(lines[at]):
        return _Explained(
            f"line {at + 1} has no ': ' after its key, so YAML reads it and the next line as "
            "one text",
            "write 'key: value' with a space after the colon",
            at, len(lines[at]) - len(lines[at].lstrip()), ((line, col),),
        )
    return None


def _indentation(problem: str, context: str, start: Any, line: int, col: int) -> _Explained:
    """``expected <block end>``: a line that lines up with no block above it."""
    also = ((start.line, start.column),) if start is not None else ()
    since = f" (the block that starts at line {start.line + 1})" if start is not None else ""
    if "sequence start" in problem or "'-'" in problem:
        return _Explained(
            f"a list item '- ' is not lined up with the items around it{since}",
            "line the '-' up with the other items of its list, or put the list under a key "
            "that ends with ':' on the line above",
            line, col, also,
        )
    if "<scalar>" in problem:
        return _Explained(
            "text follows a value that ended (a closing quote, or the value of a key)",
            "quote the whole value, or move the text to a line of its own",
            line, col, also,
        )
    return _Explained(
        f"this line's indentation does not line up with the lines above it{since}",
        _INDENT_HINT, line, col, also,
    )


def _data_children(node: Any) -> Sequence[Any]:
    return list(node.values()) if isinstance(node, dict) else node


def _node_children(node: Any) -> Sequence[Any]:
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return node.value  # type: ignore[no-any-return]


def _shape_problem(reason: str, text: str, shown: str) -> Problem:
    """The loaded data cannot be walked safely; the same walk over the composed nodes (safe:
    the text itself nests no deeper than the limit) finds the place."""
    def where(node: Any) -> Where:
        mark = node.start_mark
        return Where(shown, line=mark.line + 1, column=mark.column + 1)

    found: Trouble | None = None
    with contextlib.suppress(YAMLError):
        found = shape_trouble(_compose(text), (MappingNode, SequenceNode), _node_children)
    at = where(found.at) if found is not None else Where(shown, line=1, column=1)
    also = (where(found.target),) if found is not None and found.target is not None else ()
    return Problem(
        codes.NOT_YAML,
        f"the document cannot be read: {reason}",
        "write the values out instead of nesting aliases (*name) this deep or this often",
        at,
        also=also,
    )


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
