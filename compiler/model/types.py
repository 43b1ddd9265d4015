"""Value types shared by the language: names, sizes, durations, modes, secret references."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema
from pydantic_core import PydanticCustomError

from compiler.names import path_unsafe_reason
from compiler.units import MAX_AMOUNT, UnitError, parse_duration, parse_size

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
SECRET_REF_RE = re.compile(r"^(env:[A-Za-z_][A-Za-z0-9_]*|file:/\S+)$")


class Strict(BaseModel):
    """Every language object rejects unknown keys and is immutable once validated."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)


def _size(v: Any) -> int:
    try:
        return parse_size(v)
    except UnitError as err:
        raise PydanticCustomError("size", str(err)) from err


def _duration(v: Any) -> int:
    try:
        return parse_duration(v)
    except UnitError as err:
        raise PydanticCustomError("duration", str(err)) from err


def _amount(v: Any) -> int:
    """A count (int) or a size with a unit (a string), for counters that may be either."""
    if isinstance(v, int) and not isinstance(v, bool):
        if v < 0:
            raise PydanticCustomError("amount", "an amount cannot be negative")
        return _size(v)  # bounded as a size is
    if isinstance(v, str):
        return _size(v)
    raise PydanticCustomError("amount", "expected a count (e.g. 64) or a size (e.g. 512GiB)")


def _name(v: Any) -> str:
    if not isinstance(v, str):
        raise PydanticCustomError("string_type", "expected a name (a string)")
    if not _NAME_RE.match(v):
        raise PydanticCustomError(
            "name",
            f"{v!r} is not a valid name: start with a letter or digit, then letters, digits, "
            "'.', '_' or '-'",
        )
    return v


def _safe_name(v: Any) -> str:
    """Names that become path components on a shared filesystem (N12)."""
    if not isinstance(v, str):
        raise PydanticCustomError("string_type", "expected a name (a string)")
    reason = path_unsafe_reason(v)
    if reason:
        # repr: a NUL or control character is shown escaped, never written to the terminal
        raise PydanticCustomError("path_unsafe", f"{v!r} is not a path-safe name: {reason}")
    return v


def _dataset_part(v: Any) -> str:
    """A dataset's name or version: path-safe, and without the '@' of its id ``name@version``
    (``a@b`` version ``1`` and ``a`` version ``b@1`` would be the same dataset)."""
    text = _safe_name(v)
    if "@" in text:
        raise PydanticCustomError(
            "dataset_id", f"{text!r} contains '@', which separates name and version in name@version"
        )
    return text


def _mode(v: Any) -> str:
    """A permission mode; ``0700`` written unquoted arrives as the int 700, read as octal."""
    text = str(v) if isinstance(v, int) and not isinstance(v, bool) else v
    if not isinstance(text, str) or not re.fullmatch(r"[0-7]{3,4}", text):
        raise PydanticCustomError("mode", f"'{v}' is not a permission mode such as \"0700\"")
    return text.rjust(4, "0")


def _version(v: Any) -> str:
    if isinstance(v, bool) or not isinstance(v, int | str):
        raise PydanticCustomError(
            "name",
            f"a dataset version is a whole number or a string, got {v!r}; quote it to keep it "
            'as written (version: "3.10")',
        )
    return _dataset_part(str(v))


_SIZE_STRING = {
    "type": "string",
    "pattern": r"^\d+(\.\d+)?\s*(B|KB|MB|GB|TB|PB|KiB|MiB|GiB|TiB|PiB)?$",
}
_SIZE_SCHEMA = {
    "anyOf": [{"type": "integer", "minimum": 0}, _SIZE_STRING],
    "description": "bytes, or a number with a unit: B, KB…PB (powers of 10), KiB…PiB (powers of 2)",
}
_DURATION_SCHEMA = {
    "anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "pattern": r"^(\d+[smhd])+$"}],
    "description": "seconds, or e.g. 90s, 30m, 12h, 14d, 1h30m",
}
_AMOUNT_SCHEMA = {
    "anyOf": [{"type": "integer", "minimum": 0}, _SIZE_STRING],
    "description": "a count, or a size with a unit",
}

Size = Annotated[int, BeforeValidator(_size), WithJsonSchema(_SIZE_SCHEMA)]
Duration = Annotated[int, BeforeValidator(_duration), WithJsonSchema(_DURATION_SCHEMA)]
Amount = Annotated[int, BeforeValidator(_amount), WithJsonSchema(_AMOUNT_SCHEMA)]
Name = Annotated[
    str, BeforeValidator(_name), WithJsonSchema({"type": "string", "pattern": _NAME_RE.pattern})
]
SafeName = Annotated[
    str,
    BeforeValidator(_safe_name),
    WithJsonSchema({"type": "string", "pattern": r"^[^/\s-][^/\s]*$"}),
]
DatasetName = Annotated[
    str,
    BeforeValidator(_dataset_part),
    WithJsonSchema({"type": "string", "pattern": r"^[^/\s@-][^/\s@]*$"}),
]
Mode = Annotated[
    str, BeforeValidator(_mode), WithJsonSchema({"type": "string", "pattern": r"^[0-7]{3,4}$"})
]
Version = Annotated[str, BeforeValidator(_version), WithJsonSchema({"type": ["integer", "string"]})]
_REF = "env:NAME or file:/path"
# Checked by compiler/checks/secrets.py rather than here: a type error would print the value.
SecretRef = Annotated[
    Any,
    WithJsonSchema({"type": "string", "pattern": SECRET_REF_RE.pattern, "description": _REF}),
]
Count = Annotated[int, Field(ge=0, le=MAX_AMOUNT)]
Description = Annotated[str, Field(max_length=2000)]
