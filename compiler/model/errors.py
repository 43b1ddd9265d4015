"""Pydantic validation errors turned into located problems with stable codes and hints."""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
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


@dataclass(frozen=True, slots=True)
class _Error:
    """One pydantic error with its place: what each kind of problem is made from."""

    model: type[BaseModel]
    where: Where  # where the model's value is written
    loc: tuple[str | int, ...]  # inside it, without pydantic's markers
    on_key: bool  # the error is about a key, not its value
    msg: str
    value: Any
    ctx: dict[str, Any]

    @classmethod
    def of(cls, err: ErrorDetails, model: type[BaseModel], where: Where) -> _Error:
        loc, on_key = _clean_loc(tuple(err["loc"]))
        return cls(model, where, loc, on_key, err["msg"], err.get("input"),
                   dict(err.get("ctx", {})))

    @property
    def at(self) -> Where:
        return Where(self.where.file, self.where.ypath + self.loc, key=self.on_key)

    @property
    def shown(self) -> str:
        """The value as a message may show it: under a secret key (``credentials`` is one),
        never the value itself."""
        if any(is_secret_key(str(p)) for p in self.loc):
            return "a value (not shown)"
        return _short(self.value)

    @property
    def last(self) -> str:
        return str(self.loc[-1]) if self.loc else "?"


def _unknown_key(e: _Error) -> Problem:
    keys = known_keys(e.model, e.loc[:-1])
    hint = did_you_mean(e.last, keys) or f"allowed keys here: {', '.join(keys)}"
    return Problem(codes.UNKNOWN_KEY, f"unknown key '{visible(e.last)}'", hint, e.at.at_key())


def _missing_key(e: _Error) -> Problem:
    parent = Where(e.where.file, e.where.ypath + e.loc[:-1])
    hint = DIGEST_HINT if e.last == "digest" else f"add '{e.last}:' here"
    return Problem(codes.MISSING_KEY, f"missing required key '{e.last}'", hint, parent)


def _not_plain_data(e: _Error) -> Problem:
    what = "plain data (text, a number, true/false, a list or a mapping)"
    return Problem(codes.WRONG_TYPE, f"expected {what}, got {e.shown}", _QUOTE_IT, e.at)


def _path_unsafe(e: _Error) -> Problem:
    return Problem(codes.NOT_PATH_SAFE, e.msg,
                   "use a name without '/', '..', NUL, white space or a leading '-'",
                   e.at.at_key() if e.on_key else e.at)


def _bad_name(e: _Error) -> Problem:
    return Problem(codes.NOT_ALLOWED, e.msg, "", e.at.at_key() if e.on_key else e.at)


def _not_one_of(e: _Error) -> Problem:
    expected = str(e.ctx.get("expected", ""))
    return Problem(codes.NOT_ALLOWED, f"{e.shown} is not allowed here", f"use one of {expected}",
                   e.at)


def _wrong_form(e: _Error) -> Problem:
    pattern = str(e.ctx.get("pattern", ""))
    hint = "write sha256:<64 lowercase hex digits>" if "sha256" in pattern else ""
    if pattern == "^/":
        hint = "write an absolute path, starting with '/'"
    return Problem(codes.NOT_ALLOWED, f"{e.shown} has the wrong form", hint, e.at)


def _value_error(e: _Error) -> Problem:
    return Problem(codes.NOT_ALLOWED, e.msg.removeprefix("Value error, "), "", e.at)


# pydantic error type -> the problem it is; the types of _OWN_MESSAGE, _OUT_OF_RANGE and the
# wrong types are told apart in ``translate``.
_BY_TYPE: dict[str, Callable[[_Error], Problem]] = {
    "extra_forbidden": _unknown_key,
    "missing": _missing_key,
    "invalid-json-value": _not_plain_data,
    "path_unsafe": _path_unsafe,
    "name": _bad_name,
    "literal_error": _not_one_of,
    "enum": _not_one_of,
    "string_pattern_mismatch": _wrong_form,
    "value_error": _value_error,
}
if _BY_TYPE.keys() & _OWN_MESSAGE.keys():
    raise AssertionError("an error type with its own message has a problem of its own too")


def translate(err: ErrorDetails, model: type[BaseModel], where: Where) -> Problem:
    """One pydantic error as a Problem located at ``where`` + the error's location."""
    e = _Error.of(err, model, where)
    etype = err["type"]
    if etype in _BY_TYPE:
        return _BY_TYPE[etype](e)
    if etype in _OWN_MESSAGE:
        code, hint = _OWN_MESSAGE[etype]
        return Problem(code, e.msg, hint, e.at)
    if etype in _OUT_OF_RANGE:
        return Problem(codes.NOT_ALLOWED, f"{e.shown}: {e.msg.lower()}", "", e.at)
    base = etype.split("_", 1)[0]
    want = _TYPE_NAMES.get(base, base)
    return Problem(codes.WRONG_TYPE, f"expected {want}, got {e.shown}",
                   _type_hint(etype, e.value), e.at)


def problems_from(exc: ValidationError, model: type[BaseModel], where: Where) -> list[Problem]:
    return [translate(e, model, where) for e in exc.errors(include_url=False)]
