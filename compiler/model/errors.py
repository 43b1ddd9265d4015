"""Pydantic validation errors turned into located problems with stable codes and hints."""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from compiler.names import did_you_mean, visible
from compiler.problems import Problem, Where
from compiler.secrets import is_secret_key

_TYPE_NAMES = {
    "int": "a whole number",
    "float": "a number",
    "bool": "true or false",
    "string": "a string",
    "str": "a string",
    "list": "a list",
    "dict": "a mapping",
    "model": "a mapping",
}


# A value of the right type but out of bounds: too small, too large, too short, too long.
_OUT_OF_RANGE = frozenset({
    "greater_than_equal", "less_than_equal", "greater_than", "less_than",
    "string_too_short", "string_too_long", "too_short", "too_long",
})  # fmt: skip

_QUOTE_IT = "quote a date or other special value to pass it as text: '2024-01-01'"
# Errors whose message says it all: (code, hint).
_OWN_MESSAGE = {
    "size": ("XCE103", "sizes are bytes or a number with a unit, e.g. 512GiB"),
    "amount": ("XCE103", "sizes are bytes or a number with a unit, e.g. 512GiB"),
    "duration": ("XCE104", "durations are seconds or e.g. 90s, 30m, 12h, 14d"),
    "dataset_id": ("XCE406", "rename it without '@'"),
    "json_number": ("XCE106", "write a finite number, or quote it to pass it as text"),
}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _unwrap(annotation: Any) -> list[Any]:
    """The model classes an annotation may hold (through Optional, list, dict, Annotated)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType, list, dict, tuple):
        out: list[Any] = []
        for arg in typing.get_args(annotation):
            out.extend(_unwrap(arg))
        return out
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return []


def known_keys(model: type[BaseModel], loc: tuple[str | int, ...]) -> list[str]:
    """Field names of the model found by following ``loc`` from ``model``."""
    current: list[type[BaseModel]] = [model]
    for part in loc:
        if isinstance(part, int):
            continue
        nxt: list[type[BaseModel]] = []
        for m in current:
            field = m.model_fields.get(part)
            if field is not None:
                nxt.extend(_unwrap(field.annotation))
        if nxt:
            current = nxt
    return sorted({name for m in current for name in m.model_fields})


def _clean_loc(loc: tuple[str | int, ...]) -> tuple[tuple[str | int, ...], bool]:
    """Drop pydantic's ``[key]`` markers and union branch names; say if it points at a key."""
    out: list[str | int] = []
    key = False
    for part in loc:
        if part == "[key]":
            key = True
            continue
        if isinstance(part, str) and ("[" in part or part.startswith("function-")):
            continue
        out.append(part)
    return tuple(out), key


def translate(err: ErrorDetails, model: type[BaseModel], where: Where) -> Problem:
    """One pydantic error as a Problem located at ``where`` + the error's location."""
    loc, on_key = _clean_loc(tuple(err["loc"]))
    etype = err["type"]
    msg = err["msg"]
    value = err.get("input")
    at = Where(where.file, where.ypath + loc, key=on_key)
    # Under a secret key (``credentials`` is one), a type error names the type, never the value.
    secret = any(is_secret_key(str(p)) for p in loc)
    shown = "a value (not shown)" if secret else _short(value)
    if etype == "extra_forbidden":
        name = str(loc[-1]) if loc else "?"
        keys = known_keys(model, loc[:-1])
        hint = did_you_mean(name, keys) or f"allowed keys here: {', '.join(keys)}"
        return Problem("XCE101", f"unknown key '{visible(name)}'", hint, at.at_key())
    if etype == "missing":
        name = str(loc[-1]) if loc else "?"
        parent = Where(where.file, where.ypath + loc[:-1])
        return Problem("XCE105", f"missing required key '{name}'", f"add '{name}:' here", parent)
    if etype in _OWN_MESSAGE:
        code, hint = _OWN_MESSAGE[etype]
        return Problem(code, msg, hint, at)
    if etype == "invalid-json-value":
        what = "plain data (text, a number, true/false, a list or a mapping)"
        return Problem("XCE102", f"expected {what}, got {shown}", _QUOTE_IT, at)
    if etype == "path_unsafe":
        return Problem(
            "XCE406",
            msg,
            "use a name without '/', '..', NUL, white space or a leading '-'",
            at.at_key() if on_key else at,
        )
    if etype in ("name", "mode"):
        return Problem("XCE106", msg, "", at.at_key() if on_key else at)
    if etype in ("literal_error", "enum"):
        expected = str(err.get("ctx", {}).get("expected", ""))
        return Problem(
            "XCE106", f"{shown} is not allowed here", f"use one of {expected}", at
        )
    if etype == "string_pattern_mismatch":
        pattern = str(err.get("ctx", {}).get("pattern", ""))
        hint = "write sha256:<64 lowercase hex digits>" if "sha256" in pattern else ""
        if pattern == "^/":
            hint = "write an absolute path, starting with '/'"
        return Problem("XCE106", f"{shown} has the wrong form", hint, at)
    if etype == "value_error":
        text = msg.removeprefix("Value error, ")
        return Problem("XCE106", text, "", at)
    if etype in _OUT_OF_RANGE:
        return Problem("XCE106", f"{shown}: {msg.lower()}", "", at)
    base = etype.split("_", 1)[0]
    want = _TYPE_NAMES.get(base, base)
    return Problem(
        "XCE102",
        f"expected {want}, got {shown}",
        "check the type of this value",
        at,
    )


def problems_from(exc: ValidationError, model: type[BaseModel], where: Where) -> list[Problem]:
    return [translate(e, model, where) for e in exc.errors(include_url=False)]
