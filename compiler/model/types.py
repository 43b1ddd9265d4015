"""Value types shared by the language: names, sizes, durations, modes, secret references."""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    WithJsonSchema,
)
from pydantic_core import PydanticCustomError

from compiler.names import invisible_reason, path_unsafe_reason, shown, too_long_reason
from compiler.secrets import REFERENCE_FORMS, REFERENCE_PATTERN, is_secret_key
from compiler.units import MAX_AMOUNT, UnitError, parse_duration, parse_size

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


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
    reason = too_long_reason(v) or invisible_reason(v)
    if reason is None and not _NAME_RE.match(v):
        reason = "start with a letter or digit, then letters, digits, '.', '_' or '-'"
    if reason:
        raise PydanticCustomError("name", f"{shown(v)} is not a valid name: {reason}")
    return v


def _safe_name(v: Any) -> str:
    """Names that become path components on a shared filesystem (N12)."""
    if not isinstance(v, str):
        raise PydanticCustomError("string_type", "expected a name (a string)")
    reason = path_unsafe_reason(v)
    if reason:
        # repr: a NUL, control or invisible character is shown escaped, never written out
        raise PydanticCustomError("path_unsafe", f"{shown(v)} is not a path-safe name: {reason}")
    return v


def _label(v: Any) -> str:
    """A name that is no path component but is shown in plans (a rack, a template, a host to
    reach, a group to own files): any printable text, bounded like a name."""
    if not isinstance(v, str):
        raise PydanticCustomError("string_type", "expected a name (a string)")
    reason = too_long_reason(v) or invisible_reason(v)
    if reason is None and not v.isprintable():
        reason = "it contains a control character"
    if reason:
        raise PydanticCustomError("name", f"{shown(v)} is not a valid name: {reason}")
    return v


def _volume_path(v: str) -> str:
    """An absolute path whose every component is path-safe, as the directory provider
    requires: checked here so that a bad path fails the compile, not the apply."""
    parts = v.strip("/").split("/")
    if not v.strip("/"):
        raise PydanticCustomError("path_unsafe", f"{shown(v)} names no folder below '/'")
    for part in parts:
        reason = path_unsafe_reason(part)
        if reason:
            raise PydanticCustomError(
                "path_unsafe", f"{shown(v)} is not a safe path: {shown(part)}: {reason}"
            )
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


_JSON_INTEGERS = range(-(2**63), 2**64)  # what a JSON writer takes as an integer


def _json_numbers(data: dict[str, Any]) -> dict[str, Any]:
    """Numbers JSON cannot carry as written: infinity and NaN (a writer makes them null),
    integers past 64 bits (a writer fails)."""
    stack: list[tuple[str, Any]] = [("params", data)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            stack.extend((f"{path}.{k}", v) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(node))
        elif isinstance(node, float) and not math.isfinite(node):
            raise PydanticCustomError("json_number", f"{path} is {node}, which JSON cannot hold")
        elif isinstance(node, int) and not isinstance(node, bool) and node not in _JSON_INTEGERS:
            shown = "(not shown)" if is_secret_key(path) else _short_int(node)
            raise PydanticCustomError("json_number", f"{path} is beyond 64 bits: {shown}")
    return data


def _short_int(n: int) -> str:
    text = str(n)
    return text if len(text) <= 30 else f"{text[:12]}… ({len(text)} digits)"


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
Label = Annotated[str, BeforeValidator(_label)]
# Free settings that a program reads as JSON (an external provider's params).
JsonData = Annotated[dict[str, JsonValue], AfterValidator(_json_numbers)]
VolumePath = Annotated[str, Field(pattern=r"^/"), AfterValidator(_volume_path)]
Mode = Annotated[
    str, BeforeValidator(_mode), WithJsonSchema({"type": "string", "pattern": r"^[0-7]{3,4}$"})
]
Version = Annotated[str, BeforeValidator(_version), WithJsonSchema({"type": ["integer", "string"]})]
# Checked by compiler/checks/secrets.py rather than here: a type error would print the value.
SecretRef = Annotated[
    Any,
    WithJsonSchema(
        {"type": "string", "pattern": REFERENCE_PATTERN, "description": REFERENCE_FORMS}
    ),
]
Count = Annotated[int, Field(ge=0, le=MAX_AMOUNT)]
Description = Annotated[str, Field(max_length=2000)]
