"""Pydantic validation errors turned into located problems with stable codes and hints."""

from __future__ import annotations

import re
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from compiler.core import codes
from compiler.core.names import did_you_mean, visible
from compiler.core.problems import Problem, Where
from compiler.core.secrets import is_secret_key
from compiler.core.units import DURATION_HINT, SIZE_HINT
from compiler.model.datasets import DIGEST_HINT
from compiler.model.drift import OWN_MESSAGES as DRIFT_MESSAGES
from compiler.model.retention import OWN_MESSAGES as RETENTION_MESSAGES

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

# ``name:t``: a key and value without the space YAML needs after the ':'.
_GLUED = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_.-]*):([^\s:/].*)")
_QUOTE_IT = "quote a date or other special value to pass it as text: '2024-01-01'"
# Errors whose message says it all: (code, hint).
_SIZE = (codes.NOT_A_SIZE, SIZE_HINT)
_OWN_MESSAGE = {
    "size": _SIZE,
    "amount": _SIZE,
    "duration": (codes.NOT_A_DURATION, DURATION_HINT),
    "count": (
        codes.COUNT_NOT_A_NUMBER,
        'write the number alone, without quotes or a unit (64, not "64" or 64GiB)',
    ),
    "dataset_id": (codes.NOT_PATH_SAFE, "rename it without '@'"),
    "digest": (codes.NOT_ALLOWED, DIGEST_HINT),
    "json_number": (codes.NOT_ALLOWED, "write a finite number, or quote it to pass it as text"),
    "mode": (codes.NOT_ALLOWED, 'write 3 or 4 octal digits in quotes, e.g. mode: "0700"'),
    "mode_number": (codes.NOT_ALLOWED, 'write the mode in quotes, e.g. mode: "0700"'),
    **DRIFT_MESSAGES,
    **RETENTION_MESSAGES,
}


def _type_hint(etype: str, value: Any) -> str:
    """What to write instead of a value of the wrong type (never showing the value)."""
    if etype == "bool_type":
        return "write true or false; YAML 1.2 reads yes, no, on and off as text"
    if etype in ("int_type", "float_type") and isinstance(value, str):
        return "write the number without quotes"
    if etype == "int_type" and isinstance(value, float):
        return "write a whole number, without a decimal point"
    glued = _GLUED.fullmatch(value) if isinstance(value, str) else None
    if glued is not None and etype in ("model_type", "model_attributes_type", "dict_type"):
        key, rest = glued.groups()
        return (f"write a space after the ':' ({key}: {rest}); without it YAML reads "
                f"'{key}:{rest}' as text, not as a key and its value")
    return "check the type of this value"


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


def _keys(model: type[BaseModel]) -> dict[str, Any]:
    """A model's fields by the key written in a file (its alias, as ``from``, if it has one)."""
    return {f.alias or name: f for name, f in model.model_fields.items()}


def known_keys(model: type[BaseModel], loc: tuple[str | int, ...]) -> list[str]:
    """Keys of the model found by following ``loc`` from ``model``."""
    current: list[type[BaseModel]] = [model]
    for part in loc:
        if isinstance(part, int):
            continue
        nxt: list[type[BaseModel]] = []
        for m in current:
            field = _keys(m).get(str(part))
            if field is not None:
                nxt.extend(_unwrap(field.annotation))
        if nxt:
            current = nxt
    return sorted({key for m in current for key in _keys(m)})


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
        return Problem(codes.UNKNOWN_KEY, f"unknown key '{visible(name)}'", hint, at.at_key())
    if etype == "missing":
        name = str(loc[-1]) if loc else "?"
        parent = Where(where.file, where.ypath + loc[:-1])
        hint = DIGEST_HINT if name == "digest" else f"add '{name}:' here"
        return Problem(codes.MISSING_KEY, f"missing required key '{name}'", hint, parent)
    if etype in _OWN_MESSAGE:
        code, hint = _OWN_MESSAGE[etype]
        return Problem(code, msg, hint, at)
    if etype == "invalid-json-value":
        what = "plain data (text, a number, true/false, a list or a mapping)"
        return Problem(codes.WRONG_TYPE, f"expected {what}, got {shown}", _QUOTE_IT, at)
    if etype == "path_unsafe":
        return Problem(
            codes.NOT_PATH_SAFE,
            msg,
            "use a name without '/', '..', NUL, white space or a leading '-'",
            at.at_key() if on_key else at,
        )
    if etype == "name":
        return Problem(codes.NOT_ALLOWED, msg, "", at.at_key() if on_key else at)
    if etype in ("literal_error", "enum"):
        expected = str(err.get("ctx", {}).get("expected", ""))
        return Problem(
            codes.NOT_ALLOWED, f"{shown} is not allowed here", f"use one of {expected}", at
        )
    if etype == "string_pattern_mismatch":
        pattern = str(err.get("ctx", {}).get("pattern", ""))
        hint = "write sha256:<64 lowercase hex digits>" if "sha256" in pattern else ""
        if pattern == "^/":
            hint = "write an absolute path, starting with '/'"
        return Problem(codes.NOT_ALLOWED, f"{shown} has the wrong form", hint, at)
    if etype == "value_error":
        text = msg.removeprefix("Value error, ")
        return Problem(codes.NOT_ALLOWED, text, "", at)
    if etype in _OUT_OF_RANGE:
        return Problem(codes.NOT_ALLOWED, f"{shown}: {msg.lower()}", "", at)
    base = etype.split("_", 1)[0]
    want = _TYPE_NAMES.get(base, base)
    return Problem(codes.WRONG_TYPE, f"expected {want}, got {shown}", _type_hint(etype, value), at)


def problems_from(exc: ValidationError, model: type[BaseModel], where: Where) -> list[Problem]:
    return [translate(e, model, where) for e in exc.errors(include_url=False)]
