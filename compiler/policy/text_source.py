"""YAML loaded from text rather than a file path: for files read out of git blobs.

Mirrors ``compiler.yaml_source.load_file`` after its read step, reusing its internals, and
``TextLocator`` resolves YAML paths against the same text (never a file on disk, which
may hold another revision). Proposed to move into ``compiler/yaml_source.py``.
"""

from __future__ import annotations

from pathlib import Path

from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import Node

from compiler.problems import Problems, Where
from compiler.yaml_source import (
    Locator,
    SourceFile,
    _duplicate_keys,
    _mark_where,
    _safe_yaml,
)


def load_bytes(data: bytes, shown: str, problems: Problems) -> SourceFile | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        problems.error(
            "XCE001",
            f"file is not valid UTF-8 (byte {err.start})",
            "save the file as UTF-8",
            Where(shown, line=1, column=1),
        )
        return None
    return load_text(text, shown, problems)


def load_text(text: str, shown: str, problems: Problems) -> SourceFile | None:
    """Parse one document; ``abspath`` is the display path (there is no file)."""
    if "\x00" in text:
        problems.error(
            "XCE001",
            "file contains a NUL byte",
            "save it as a text file",
            Where(shown, line=1, column=1),
        )
        return None
    try:
        data = _safe_yaml().load(text)
    except MarkedYAMLError as err:
        dups = _duplicate_keys(text, shown)
        if dups:
            problems.extend(dups)
        else:
            what = err.problem or err.context or "invalid YAML"
            problems.error(
                "XCE001",
                f"YAML syntax error: {what}",
                "check indentation, quoting and brackets around this place",
                _mark_where(shown, err),
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
    return SourceFile(shown, Path(shown), data)


class TextLocator(Locator):
    """A ``Locator`` over texts held in memory, keyed by display path."""

    def __init__(self, texts: dict[str, str]) -> None:
        super().__init__()
        self._texts = texts

    def _root(self, file: str) -> Node | None:
        if file not in self._nodes:
            text = self._texts.get(file)
            try:
                self._nodes[file] = _safe_yaml().compose(text) if text is not None else None
            except YAMLError:
                self._nodes[file] = None
        return self._nodes[file]
