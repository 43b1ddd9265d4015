"""Value types shared by the language: names, sizes, durations, modes, secret references."""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)
from pydantic_core import PydanticCustomError

from compiler.core import forms
from compiler.core.forms import JsonForm
from compiler.core.names import invisible_reason, path_unsafe_reason, shown, too_long_reason
from compiler.core.secrets import is_secret_key
from compiler.core.units import MAX_AMOUNT, UnitError, parse_duration, parse_size

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class Strict(BaseModel):
    """Every language object rejects unknown keys and is immutable once validated.

    Values are taken as YAML 1.2 reads them, never converted: ``yes`` is text, not true;
    ``"64"`` is text, not a count (docs/decisions.md, "Values as YAML 1.2 reads them").
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


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


class WrittenAsSize(int):
    """An amount written as a string (``"16GiB"``, ``"16"``): bytes, never a count.

    Where one key takes either (a counter, a quota's limit), the int says which was
    written, so that a check that knows what is counted (a license pool's seats) refuses a
    size there instead of counting 17 billion seats (XCE107)."""

    __slots__ = ()


# The counters that count things (slots, GPUs, cores): a plain number only, never a size.
# Any other counter (mem, nvme, a site's own) is an amount: a count or a size.
COUNT_COUNTERS = ("slots", "cpus", "cores", "gpu", "gpus")
NO_UNIT = "a count takes a plain number, no unit"


def _not_a_count(v: str, what: str = "") -> PydanticCustomError:
    """A count written as text: ``64GiB``, ``"16"`` or ``16k`` (XCE107), never bytes."""
    return PydanticCustomError("count", f"{shown(v)} is not a count{what}: {NO_UNIT}")


def _count(v: Any) -> Any:
    """A count as YAML 1.2 reads it: an int; text (with a unit, or quoted) is XCE107, and
    any other type is left to the integer check (XCE102)."""
    if isinstance(v, str):
        raise _not_a_count(v)
    return v


class _CounterText(str):
    """A counter of ``COUNT_COUNTERS`` written as text, marked so that ``_amount``, which
    cannot see the key, refuses it at the key's own place."""

    counter: str

    def __new__(cls, text: str, counter: str) -> _CounterText:
        out = super().__new__(cls, text)
        out.counter = counter
        return out


def _counters(v: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """A mapping of counters: those that count things take a plain number."""
    if isinstance(v, dict):
        v = {
            k: _CounterText(x, k) if k in COUNT_COUNTERS and isinstance(x, str) else x
            for k, x in v.items()
        }
    return handler(v)


class BareSeconds(int):
    """A duration whose natural scale is minutes or more (a join deadline, a retention)
    written as a bare number: taken as seconds, as every duration is, and marked so that
    the document warns which unit was taken (XCE430); ``meant`` is the unit the key is
    usually written in."""

    meant: str

    def __new__(cls, seconds: int, meant: str) -> BareSeconds:
        out = super().__new__(cls, seconds)
        out.meant = meant
        return out


def _bare(meant: str) -> Callable[[Any, ValidatorFunctionWrapHandler], int]:
    def mark(v: Any, handler: ValidatorFunctionWrapHandler) -> int:
        seconds = int(handler(v))
        if isinstance(v, int) and not isinstance(v, bool) and seconds > 0:
            return BareSeconds(seconds, meant)
        return seconds

    return mark


def _amount(v: Any, handler: ValidatorFunctionWrapHandler) -> int:
    """A count (int) or a size with a unit (a string), for counters that may be either."""
    if isinstance(v, _CounterText):
        raise _not_a_count(str(v), f" ('{v.counter}' counts things)")
    if isinstance(v, int) and not isinstance(v, bool):
        if v < 0:
            raise PydanticCustomError("amount", f"{v} is not an amount: it is negative")
        return int(handler(_size(v)))  # bounded as a size is
    if isinstance(v, str):
        return WrittenAsSize(handler(_size(v)))
    raise PydanticCustomError("amount", "expected a count (e.g. 64) or a size (e.g. 512GiB)")


def _name(v: Any) -> str:
    if not isinstance(v, str):
        raise PydanticCustomError("string_type", "expected a name (a string)")
    reason = too_long_reason(v) or invisible_reason(v)
    if reason is None and not _NAME_RE.fullmatch(v):
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



MAX_REASON = 500  # characters: a sentence or two, shown on the plan's action line


def _line_break_reason(text: str) -> str | None:
    """Why ``text`` is not one line: a control character (a newline too) or a separator."""
    for c in text:
        if unicodedata.category(c) in {"Cc", "Zl", "Zp"}:
            return f"it contains U+{ord(c):04X} ({unicodedata.name(c, 'a control character')})"
    return None


def one_line(text: str, blank: str) -> str:
    """A reason is shown on one line of every plan and report: not blank (``blank`` says
    what is missing), not a page, and no line break, control or invisible character (a
    U+202E would make the plan read backwards). The one rule of every written reason."""
    if not text.strip():
        raise ValueError(blank)
    if len(text) > MAX_REASON:
        raise ValueError(f"the reason has {len(text)} characters; at most {MAX_REASON} are shown")
    why = invisible_reason(text) or _line_break_reason(text)
    if why is not None:
        raise ValueError(
            f"the reason cannot be shown as written: {why}; write it as one line of plain text"
        )
    return text
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
    """A permission mode, quoted: unquoted, YAML 1.2 reads ``0700`` as the number 700 and
    ``0o644`` as 420, and a YAML 1.1 tool reads ``0700`` as 448 (docs/decisions.md)."""
    if isinstance(v, int) and not isinstance(v, bool):
        raise PydanticCustomError(
            "mode_number",
            f"{v} is a number, not a permission mode: YAML reads an unquoted 0700 as the "
            "number 700 (and 0o700 as 448)",
        )
    if not isinstance(v, str) or not re.fullmatch(r"[0-7]{3,4}", v):
        raise PydanticCustomError("mode", f"{shown(str(v))} is not a permission mode such as "
                                  '"0700"')
    return v.rjust(4, "0")


def _version(v: Any) -> str:
    if isinstance(v, bool) or not isinstance(v, int | str):
        raise PydanticCustomError(
            "name",
            f"a dataset version is a whole number or a string, got {v!r}; quote it to keep it "
            'as written (version: "3.10")',
        )
    if isinstance(v, int) and not 0 <= v <= MAX_AMOUNT:  # what every JSON writer can write
        raise PydanticCustomError(
            "name", f"a whole-number dataset version is from 0 to {MAX_AMOUNT}; quote a "
            "longer one to keep it as text (a path-safe name of at most 255 bytes)")
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


# Each value type's JSON form (compiler/core/forms.py), named once in the schema's $defs.
Size = Annotated[int, BeforeValidator(_size), JsonForm(forms.size_form, "size")]
PositiveSize = Annotated[
    int,
    BeforeValidator(_size),
    Field(gt=0),
    JsonForm(lambda: forms.size_form(positive=True), "positive-size"),
]
Duration = Annotated[int, BeforeValidator(_duration), JsonForm(forms.duration_form, "duration")]
# Durations usually written in minutes, hours or days: a bare number is seconds, with a
# warning that says so (BareSeconds).
MinutesDuration = Annotated[Duration, WrapValidator(_bare("m"))]
HoursDuration = Annotated[Duration, WrapValidator(_bare("h"))]
DaysDuration = Annotated[Duration, WrapValidator(_bare("d"))]
PositiveDuration = Annotated[
    int,
    BeforeValidator(_duration),
    Field(gt=0),
    JsonForm(lambda: forms.duration_form(positive=True), "positive-duration"),
]
Amount = Annotated[int, WrapValidator(_amount), JsonForm(forms.amount_form, "amount")]
Name = Annotated[
    str, BeforeValidator(_name), JsonForm(lambda: forms.name_form(_NAME_RE.pattern), "name")
]
SafeName = Annotated[
    str, BeforeValidator(_safe_name), JsonForm(forms.safe_name_form, "path-safe-name")
]
DatasetName = Annotated[
    str,
    BeforeValidator(_dataset_part),
    JsonForm(lambda: forms.safe_name_form("@"), "dataset-name"),
]
Label = Annotated[str, BeforeValidator(_label), JsonForm(forms.label_form, "label")]
# Free settings that a program reads as JSON (an external provider's params).
JsonData = Annotated[
    dict[str, JsonValue],
    AfterValidator(_json_numbers),
    JsonForm(forms.json_data_form, forms.JSON_DATA),
]
VolumePath = Annotated[
    str,
    Field(pattern=r"^/"),
    AfterValidator(_volume_path),
    JsonForm(forms.volume_path_form, "volume-path"),
]
Mode = Annotated[str, BeforeValidator(_mode), JsonForm(forms.mode_form, "mode")]
Version = Annotated[
    str,
    BeforeValidator(_version),
    JsonForm(lambda: forms.version_form(forms.safe_name_form("@")), "dataset-version"),
]
# Checked by compiler/checks/secrets.py rather than here: a type error would print the value.
SecretRef = Annotated[Any, JsonForm(forms.reference_form, "secret-reference")]
# A group's hosts (compiler/core/hostlist.py reads them in the checks): may be empty.
Hostlist = Annotated[str, JsonForm(lambda: forms.hostlist_form(empty=True), "hostlist")]
# An override's key: a hostlist of at least one host.
HostlistKey = Annotated[str, JsonForm(lambda: forms.hostlist_form(empty=False), "hostlist-key")]
Count = Annotated[
    int, BeforeValidator(_count), Field(ge=0, le=MAX_AMOUNT), JsonForm(forms.count_form, "count")
]
# A number of tries (provisioning attempts): a count from 1 to 1000.
Attempts = Annotated[
    int, BeforeValidator(_count), Field(ge=1, le=1000), JsonForm(lambda: forms.count_form(1, 1000))
]
# A host's counters by name (COUNT_COUNTERS are counts, the others amounts).
Counters = Annotated[
    dict[Name, Amount],
    WrapValidator(_counters),
    JsonForm(lambda: forms.counters_form(COUNT_COUNTERS), "counters"),
]
Description = Annotated[str, Field(max_length=2000)]
