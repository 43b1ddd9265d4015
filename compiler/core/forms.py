"""The JSON Schema forms of the language's value types: what an editor checks as you type.

Each form accepts what its validator in ``types.py`` accepts, no more and no less, up to
what a JSON Schema cannot say (docs/editors.md, "What the editor cannot tell you");
tests/compiler/test_schema_agreement.py holds the two together. The forms are built only
when the schema is printed (``xce-compile --schema``), never on the compile path.

Patterns are read by two engines: Python's ``re`` (jsonschema, check-jsonschema) and
JavaScript's with the ``u`` flag (yaml-language-server). They use only what both read the
same way: ``[0-9]`` rather than ``\\d``, character classes written as ``\\uXXXX`` escapes of
the Basic Multilingual Plane rather than ``\\s``, and ``$`` (which the schema export makes
the very end of the text in both, see ``schema_export``).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable
from typing import Any

from pydantic import GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from compiler.core.names import MAX_NAME_BYTES
from compiler.core.secrets import _KEY_QUALIFIERS, _SECRET_STEMS, _SECRET_WORDS, REFERENCE_PATTERN
from compiler.core.units import DURATION_PATTERN, MAX_AMOUNT, SIZE_PATTERN

_BMP = range(0x10000)
_SURROGATES = range(0xD800, 0xE000)  # never text; a lone one is refused when a file loads
# The largest finite float: a bound that keeps out infinity (which JSON cannot hold).
MAX_FLOAT = 1.7976931348623157e308


class JsonForm:
    """Pydantic metadata: a value type's JSON Schema, made when a schema is generated.

    A named form is written once in the file schema's ``$defs`` (under ``name``) and
    referred to from every key of that type; pydantic, which resolves every ``$ref`` it
    meets, only sees a placeholder (``REF_SLOT``) that the schema export replaces.
    """

    __slots__ = ("_make", "_name")

    def __init__(self, make: Callable[[], dict[str, Any]], name: str | None = None) -> None:
        self._make = make
        self._name = name
        if name is not None:
            _NAMED[name] = make

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {REF_SLOT: self._name} if self._name is not None else dict(self._make())


REF_SLOT = "x-xce-form"
_NAMED: dict[str, Callable[[], dict[str, Any]]] = {}


def named_form(name: str) -> dict[str, Any]:
    """The form registered as ``name`` (by a JsonForm)."""
    return _NAMED[name]()


def _escaped(cp: int) -> str:
    return f"\\u{cp:04x}"


@functools.cache
def char_class(name: str) -> str:
    """The body of a character class (``[...]`` without brackets) of BMP characters."""
    test = _CLASSES[name]
    out: list[str] = []
    start = prev = -2
    for cp in _BMP:
        if cp in _SURROGATES or not test(chr(cp)):
            continue
        if cp != prev + 1:
            if start >= 0:
                out.append(_span(start, prev))
            start = cp
        prev = cp
    if start >= 0:
        out.append(_span(start, prev))
    return "".join(out)


def _span(lo: int, hi: int) -> str:
    return _escaped(lo) if lo == hi else f"{_escaped(lo)}-{_escaped(hi)}"


def _category(ch: str) -> str:
    return unicodedata.category(ch)


_CLASSES: dict[str, Callable[[str], bool]] = {
    # str.isspace(): what Python's \s and str.strip() take as white space
    "space": str.isspace,
    # compiler.core.names.invisible_reason: invisible format characters
    "invisible": lambda c: _category(c) == "Cf",
    # not a path component (compiler.core.names.path_unsafe_reason), besides '..' and the first
    # character's rules
    "path-unsafe": lambda c: (
        ord(c) < 32 or ord(c) == 127 or c == "/" or c.isspace() or _category(c) == "Cf"
    ),
    # what str.isprintable() refuses, except unassigned code points (their category depends
    # on the Unicode version)
    "unprintable": lambda c: (
        _category(c) in {"Cc", "Cf", "Zl", "Zp", "Co"} or (_category(c) == "Zs" and c != " ")
    ),
    # what breaks a line or hides: a written reason (types.one_line)
    "line-break": lambda c: _category(c) in {"Cc", "Cf", "Zl", "Zp"},
}


def _branch(schema: dict[str, Any], message: str) -> dict[str, Any]:
    """One alternative, with the message an editor shows when the value fits none."""
    return {**schema, "errorMessage": message}


def _nonzero(pattern: str) -> str:
    """``pattern`` (anchored with ``^``) for a text with a non-zero digit: above zero."""
    return "^(?=[^1-9]*[1-9])" + pattern[1:]


def size_pattern(positive: bool = False) -> str:
    """compiler.core.units' size form, above zero if asked (a non-zero digit in the number)."""
    return _nonzero(SIZE_PATTERN) if positive else SIZE_PATTERN


def duration_pattern(positive: bool = False) -> str:
    """compiler.core.units' duration form, above zero if asked (a non-zero digit in a number)."""
    return _nonzero(DURATION_PATTERN) if positive else DURATION_PATTERN


SIZE_MESSAGE = (
    "a size: bytes, or a number and a unit (B, KB, MB, GB, TB, PB; KiB, MiB, GiB, TiB, PiB; "
    "case matters), e.g. 512GiB"
)
DURATION_MESSAGE = "a duration: seconds, or numbers with s, m, h or d, e.g. 90s, 30m, 14d, 1h30m"
AMOUNT_MESSAGE = "a count (a whole number, e.g. 64) or a size with a unit (e.g. 512GiB)"


def size_form(positive: bool = False) -> dict[str, Any]:
    return {
        "anyOf": [
            _branch(_whole(1 if positive else 0), SIZE_MESSAGE),
            _branch({"type": "string", "pattern": size_pattern(positive)}, SIZE_MESSAGE),
        ]
    }


def duration_form(positive: bool = False) -> dict[str, Any]:
    return {
        "anyOf": [
            _branch(_whole(1 if positive else 0), DURATION_MESSAGE),
            _branch({"type": "string", "pattern": duration_pattern(positive)}, DURATION_MESSAGE),
        ]
    }


def amount_form() -> dict[str, Any]:
    return {
        "anyOf": [
            _branch(_whole(0), AMOUNT_MESSAGE),
            _branch({"type": "string", "pattern": size_pattern()}, AMOUNT_MESSAGE),
        ]
    }


COUNT_MESSAGE = "a count takes a plain number, no unit: e.g. 64, not 64GiB or \"64\""


def count_form(minimum: int = 0, maximum: int = MAX_AMOUNT) -> dict[str, Any]:
    return {**_whole(minimum), "maximum": maximum, "errorMessage": COUNT_MESSAGE}


def counters_form(counts: tuple[str, ...]) -> dict[str, Any]:
    """A mapping of counters: ``counts`` take a count, any other name an amount."""
    return {
        "type": "object",
        "propertyNames": {REF_SLOT: "name"},
        "properties": {
            name: {REF_SLOT: "count", "description": f"{name}: a count", "examples": [8]}
            for name in counts
        },
        "additionalProperties": {REF_SLOT: "amount"},
    }


def _whole(minimum: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum, "maximum": MAX_AMOUNT}


def name_form(pattern: str) -> dict[str, Any]:
    return {
        "type": "string",
        "pattern": pattern,
        "maxLength": MAX_NAME_BYTES,
        "errorMessage": "a name: a letter or digit, then letters, digits, '.', '_' or '-'",
    }


def safe_name_pattern(extra: str = "") -> str:
    """A path-safe name: no leading '-' or '.', no '..', none of the unsafe characters."""
    bad = char_class("path-unsafe") + re.escape(extra)
    return f"^(?!.*\\.\\.)[^\\-.{bad}][^{bad}]*$"


def safe_name_form(extra: str = "") -> dict[str, Any]:
    also = f", no '{extra}'" if extra else ""
    return {
        "type": "string",
        "pattern": safe_name_pattern(extra),
        "maxLength": MAX_NAME_BYTES,
        "errorMessage": "a path-safe name: no '/', '..', white space, control or invisible "
        f"character, no leading '-' or '.'{also}",
    }


def label_form() -> dict[str, Any]:
    return {
        "type": "string",
        "pattern": f"^[^{char_class('unprintable')}]*$",
        "maxLength": MAX_NAME_BYTES,
        "errorMessage": "printable text, without control or invisible characters",
    }


def reason_form(max_length: int) -> dict[str, Any]:
    bad = char_class("line-break")
    return {
        "type": "string",
        "pattern": f"^[^{bad}]*[^{bad}{char_class('space')}][^{bad}]*$",
        "maxLength": max_length,
        "errorMessage": "one line of text: not blank, no line break, control or invisible "
        "character",
    }


def volume_path_form() -> dict[str, Any]:
    bad = char_class("path-unsafe")
    part = f"[^\\-./{bad}][^/{bad}]{{0,{MAX_NAME_BYTES - 1}}}"
    return {
        "type": "string",
        "pattern": f"^(?!.*\\.\\.)/+{part}(?:/{part})*/*$",
        "errorMessage": "an absolute path whose every folder is a path-safe name, e.g. /shared/xce",
    }


def mode_form() -> dict[str, Any]:
    return {
        "type": "string",
        "pattern": "^[0-7]{3,4}$",
        "errorMessage": 'a permission mode in quotes: 3 or 4 octal digits, e.g. "0700"',
    }


def version_form(name: dict[str, Any]) -> dict[str, Any]:
    message = "a whole number, or a path-safe text without '@' (quote \"3.10\")"
    return {
        "anyOf": [
            _branch({"type": "integer", "minimum": 0, "maximum": MAX_AMOUNT}, message),
            _branch({k: v for k, v in name.items() if k != "errorMessage"}, message),
        ]
    }


_RANGE = "[0-9]+(?:-[0-9]+)?"
_TERM = f"(?:[A-Za-z0-9._-]|\\[{_RANGE}(?:,{_RANGE})*\\])+"
HOSTLIST_MESSAGE = (
    "a Slurm hostlist: names and [lo-hi,n] ranges, terms separated by commas, no spaces, "
    "e.g. cn[0001-0512],gpu[01-08]"
)


def hostlist_form(empty: bool) -> dict[str, Any]:
    """compiler.core.hostlist's grammar (a group's ``hosts`` may also be empty)."""
    body = f"{_TERM}(?:,{_TERM})*"
    return {
        "type": "string",
        "pattern": f"^(?:{body})?$" if empty else f"^{body}$",
        "errorMessage": HOSTLIST_MESSAGE,
    }


def reference_pattern() -> str:
    """compiler.core.secrets' reference form, its ``\\S`` spelled out for both engines."""
    return REFERENCE_PATTERN.replace("\\S", f"[^{char_class('space')}]")


def reference_form() -> dict[str, Any]:
    return {
        "type": "string",
        "pattern": reference_pattern(),
        "errorMessage": "a secret reference: env:NAME or file:/absolute/path, never the secret",
    }


def template_form(fields: tuple[str, ...]) -> dict[str, Any]:
    """provider_params._template: text, '{{', '}}' and the placeholders alone."""
    names = "|".join(fields)
    return {
        "type": "string",
        "pattern": f"^(?:[^{{}}]|\\{{\\{{|\\}}\\}}|\\{{(?:{names}):?\\}})*$",
        "errorMessage": "an argument, with placeholders " + " ".join("{" + f + "}" for f in fields),
    }


JSON_VALUE = "json-value"  # the $defs entry of plain data, which refers to itself
JSON_DATA = "json-data"  # a mapping of it: an external provider's params
SECRET_VALUE = "secret-value"  # what a secret key may hold, at any depth


def json_value_form() -> dict[str, Any]:
    """Plain data that a JSON writer can write (types._json_numbers): finite numbers."""
    return {
        "anyOf": [
            {"type": ["null", "boolean", "string"]},
            {"type": "number", "minimum": -MAX_FLOAT, "maximum": MAX_FLOAT},
            {"type": "array", "items": {"$ref": f"#/$defs/{JSON_VALUE}"}},
            json_data_form(),
        ]
    }


def json_data_form() -> dict[str, Any]:
    """A mapping of plain data: an external provider's params."""
    return {
        "type": "object",
        "propertyNames": {"type": "string"},
        "patternProperties": {secret_key_pattern(): {"$ref": f"#/$defs/{SECRET_VALUE}"}},
        "additionalProperties": {"$ref": f"#/$defs/{JSON_VALUE}"},
    }


def given(key: str) -> dict[str, Any]:
    """The condition "``key`` is written, and not as null"."""
    return {"required": [key], "properties": {key: {"not": {"type": "null"}}}}


def unset(*keys: str, why: str) -> dict[str, Any]:
    """Each of ``keys`` absent or null; ``why`` is what an editor says otherwise."""
    return {"properties": {k: {"type": "null", "errorMessage": why} for k in keys}}


def non_empty(key: str) -> dict[str, Any]:
    """The condition "``key`` is a mapping with at least one entry"."""
    return {"required": [key], "properties": {key: {"minProperties": 1}}}



def _whole_word(word: str) -> str:
    """``word`` (lowercase) as one whole word of compiler.core.secrets' split into words: in
    lowercase, capitalised or in capitals, with the boundaries that split makes."""
    cap, upper = word.capitalize(), word.upper()
    return (
        f"(?<![A-Za-z]){word}(?![a-z])|{cap}(?![a-z])|(?<![A-Z]){upper}(?=$|[^A-Za-z]|[A-Z][a-z])"
    )


def secret_key_pattern() -> str:
    """compiler.core.secrets.is_secret_key as a pattern (searched, as patternProperties are)."""
    stems = [f"{s}|{s.capitalize()}|{s.upper()}(?![a-z])" for s in _SECRET_STEMS]
    joined = [q + k for q in _KEY_QUALIFIERS for k in ("key", "keys")]
    words = [_whole_word(w) for w in (*sorted(_SECRET_WORDS), *joined)]
    qualifier = "|".join(_whole_word(q) for q in _KEY_QUALIFIERS)
    key = "|".join(_whole_word(k) for k in ("key", "keys"))
    return "|".join([*stems, *words, f"(?:{qualifier})[^A-Za-z0-9]*(?:{key})"])


def secret_value_form() -> dict[str, Any]:
    """What a secret key's value may be, at any depth: a reference, true, false or null."""
    ref = {"$ref": f"#/$defs/{SECRET_VALUE}"}
    message = "a secret: only a reference, env:NAME or file:/path (or true, false, null)"
    return {
        "anyOf": [
            {"type": ["null", "boolean"]},
            {"type": "string", "pattern": reference_pattern(), "errorMessage": message},
            {"type": "array", "items": ref},
            {"type": "object", "propertyNames": {"type": "string"}, "additionalProperties": ref},
        ]
    }


def non_blank_form() -> dict[str, Any]:
    """Text with something in it (the policy reader's ``string``)."""
    return {
        "type": "string",
        "pattern": f"[^{char_class('space')}]",
        "errorMessage": "text, not blank",
    }


def policy_name_form(pattern: str) -> dict[str, Any]:
    return {
        "type": "string",
        "pattern": pattern,
        "errorMessage": "lowercase words joined by '-', e.g. site-monitor",
    }


def policy_date_form() -> dict[str, Any]:
    """The policy reader's ``date``: ISO 8601 text (YAML 1.2 has no date type: an unquoted
    2027-06-30 is text to the compiler's reader and to an editor alike)."""
    iso = "^[0-9]{4}(?:-[0-9]{2}-[0-9]{2}|[0-9]{4}|-W[0-9]{2}(?:-[1-7])?|W[0-9]{2}[1-7]?)$"
    return {"type": "string", "pattern": iso, "errorMessage": "a date, e.g. 2027-06-30"}
