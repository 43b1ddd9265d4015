"""Typed reading of loaded YAML mappings, each problem reported at its exact YAML path.

Policy files and the site's ``policy:`` section are small, so a hand reader (rather than a
schema library) keeps every error on the key or list item that caused it.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from compiler.core.names import did_you_mean
from compiler.core.problems import Problems, Where
from compiler.core.times import parse_date
from compiler.policy import codes
from compiler.source.yaml_source import SourceFile


@dataclass(frozen=True, slots=True)
class Ref:
    """A string written in a file (a selector, a role or guardrail name) and where it is."""

    text: str
    where: Where


def type_name(value: Any) -> str:
    if value is None:
        return "nothing"
    return {dict: "a mapping", list: "a list", str: "a string", bool: "true/false"}.get(
        type(value), type(value).__name__
    )


class Fields:
    """One YAML mapping being read; unknown keys and missing required keys are reported once."""

    def __init__(
        self,
        data: Mapping[str, Any],
        where: Where,
        problems: Problems,
        *,
        required: tuple[str, ...] = (),
        optional: tuple[str, ...] = (),
    ) -> None:
        self.data = data
        self.where = where
        self.problems = problems
        known = required + optional
        for key in data:
            if key not in known:
                problems.error(
                    codes.UNKNOWN_KEY,
                    f"unknown key '{key}'",
                    did_you_mean(str(key), known) or "allowed keys: " + ", ".join(known),
                    where.child(str(key)).at_key(),
                )
        for key in required:
            if key not in data:
                problems.error(codes.MISSING_KEY, f"missing required key '{key}'", "", where)

    @classmethod
    def of(
        cls,
        value: Any,
        where: Where,
        problems: Problems,
        what: str,
        *,
        required: tuple[str, ...] = (),
        optional: tuple[str, ...] = (),
    ) -> Fields | None:
        """Read ``value`` as a mapping, or report that ``what`` must be one."""
        if not isinstance(value, dict):
            problems.error(codes.BAD_VALUE, f"{what} must be a mapping, not {type_name(value)}",
                           "", where)
            return None
        return cls(value, where, problems, required=required, optional=optional)

    def at(self, key: str) -> Where:
        return self.where.child(key)

    def has(self, key: str) -> bool:
        return key in self.data

    def _wrong(self, key: str, expected: str) -> None:
        got = type_name(self.data[key])
        self.problems.error(codes.BAD_VALUE, f"'{key}' must be {expected}, not {got}", "",
                            self.at(key))

    def string(
        self, key: str, pattern: re.Pattern[str] | None = None, hint: str = ""
    ) -> str | None:
        if key not in self.data:
            return None
        value = self.data[key]
        if not isinstance(value, str) or not value.strip():
            self._wrong(key, "a non-empty string")
            return None
        if pattern is not None and not pattern.match(value):
            self.problems.error(codes.BAD_NAME, f"invalid {key} '{value}'", hint, self.at(key))
            return None
        return value

    def ref(self, key: str) -> Ref | None:
        text = self.string(key)
        return Ref(text, self.at(key)) if text is not None else None

    def refs(self, key: str, *, non_empty: bool = True) -> tuple[Ref, ...]:
        """A list of strings, each with its own place (so an unknown one points at itself)."""
        if key not in self.data:
            return ()
        value = self.data[key]
        if not isinstance(value, list) or (non_empty and not value):
            self._wrong(key, "a non-empty list of strings" if non_empty else "a list of strings")
            return ()
        out: list[Ref] = []
        for i, item in enumerate(value):
            if isinstance(item, str) and item.strip():
                out.append(Ref(item, self.at(key).child(i)))
            else:
                self.problems.error(
                    codes.BAD_VALUE,
                    f"'{key}' items must be strings, not {type_name(item)}",
                    "",
                    self.at(key).child(i),
                )
        return tuple(out)

    def items(self, key: str) -> list[tuple[Any, Where]]:
        """The items of a list, each with its place; a missing key is an empty list."""
        if key not in self.data:
            return []
        value = self.data[key]
        if not isinstance(value, list):
            self._wrong(key, "a list")
            return []
        return [(item, self.at(key).child(i)) for i, item in enumerate(value)]

    def integer(self, key: str, minimum: int | None = None) -> int | None:
        if key not in self.data:
            return None
        value = self.data[key]
        if isinstance(value, bool) or not isinstance(value, int):
            self._wrong(key, "an integer")
            return None
        if minimum is not None and value < minimum:
            self._wrong(key, f"an integer of at least {minimum}")
            return None
        return value

    def boolean(self, key: str) -> bool:
        if key not in self.data:
            return False
        value = self.data[key]
        if not isinstance(value, bool):
            self._wrong(key, "true or false")
            return False
        return value

    def date(self, key: str) -> datetime.date | None:
        """A date written ``2027-06-30`` (YAML reads it as a date) or as that string."""
        if key not in self.data:
            return None
        found = parse_date(self.data[key])
        if found is None:
            self._wrong(key, "a date like 2027-06-30")
        return found


def read_document(
    source: SourceFile,
    problems: Problems,
    *,
    required: tuple[str, ...],
    optional: tuple[str, ...] = (),
) -> Fields | None:
    """A policy file: a mapping with ``version: 1`` and the given sections."""
    where = Where(source.path)
    if not isinstance(source.data, dict):
        problems.error(
            codes.FILE_NOT_VERSION_1,
            f"a policy file must be a mapping, not {type_name(source.data)}",
            "start the file with 'version: 1'",
            where,
        )
        return None
    fields = Fields(
        source.data, where, problems, required=("version", *required), optional=optional
    )
    version = source.data.get("version")
    if "version" in source.data and version != 1:
        problems.error(
            codes.FILE_NOT_VERSION_1,
            f"unsupported policy file version {version!r}",
            "this xce-gitops reads 'version: 1'",
            where.child("version"),
        )
        return None
    return fields
