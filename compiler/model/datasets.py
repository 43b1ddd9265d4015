"""Datasets (``datasets:``) and caches (``caches:``): immutable ``name@version`` (PR-5)."""

from __future__ import annotations

import unicodedata
from typing import Annotated

from pydantic import AfterValidator, Field, WithJsonSchema

from compiler.model.types import DatasetName, Description, Name, Size, Strict, Version
from compiler.names import invisible_reason

Digest = Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]


MAX_REASON = 500  # characters: a sentence or two, shown on the plan's action line


def _line_break_reason(text: str) -> str | None:
    """Why ``text`` is not one line: a control character (a newline too) or a separator."""
    for c in text:
        if unicodedata.category(c) in {"Cc", "Zl", "Zp"}:
            return f"it contains U+{ord(c):04X} ({unicodedata.name(c, 'a control character')})"
    return None


def _one_line(text: str) -> str:
    """A reason is shown on one line of every plan: not blank, not a page, and no line
    break, control or invisible character (a U+202E would make the plan read backwards)."""
    if not text.strip():
        raise ValueError("a correction needs a reason: say why the applied version is wrong")
    if len(text) > MAX_REASON:
        raise ValueError(f"the reason has {len(text)} characters; at most {MAX_REASON} are shown")
    why = invisible_reason(text) or _line_break_reason(text)
    if why is not None:
        raise ValueError(f"the reason cannot be shown as written: {why}; write it as one line "
                         "of plain text")
    return text


Reason = Annotated[
    str,
    AfterValidator(_one_line),
    WithJsonSchema({"type": "string", "maxLength": MAX_REASON,
                    "pattern": r"^[^\n\r]*\S[^\n\r]*$",
                    "description": "why the applied version is corrected in place; one line, "
                    "shown on the plan's actions"}),
]


class Replaced(Strict):
    """The applied version a correction replaces, exactly as the cluster has it."""

    digest: Digest
    size: Size


class Correction(Strict):
    """An explicit in-place fix of an applied ``name@version``: why, and what it replaces.

    Naming what it replaces keeps it to one change: left in the file after it is applied, it
    does not let a later edit of the same version through.
    """

    reason: Reason
    replaces: Replaced


class Copy(Strict):
    location: str
    provider: Name


class Dataset(Strict):
    name: DatasetName
    version: Version
    description: Description = ""
    size: Size
    digest: Digest
    source: str
    copies: list[Copy] = Field(default_factory=list)
    correction: Correction | None = None

    @property
    def ident(self) -> str:
        """``name@version``: the dataset's identity, which never changes its bytes."""
        return f"{self.name}@{self.version}"


class Cache(Strict):
    """A location's dataset cache: its capacity is charged by the copies held there."""

    location: str
    capacity: Size
    provider: Name
