"""Path-safe names and entry ids, checked before any name touches a filesystem call.

A name from a request becomes one path component; anything that could climb out of a
directory (``/``, ``..``), truncate a C string (NUL), pass as a command-line option
(leading ``-``) or confuse a log line is refused up front, by the same rule the compiler
applies to names in site-config (``compiler.core.names.path_unsafe_reason``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from compiler.core.names import path_unsafe_reason
from reconciler.protocol import ErrorCode, ProviderError


def invalid(message: str) -> ProviderError:
    return ProviderError(ErrorCode.INVALID_ARGUMENT, message)


def safe_name(value: object, what: str) -> str:
    """``value`` if it is usable as one path component (``path_unsafe_reason``, which also
    holds it to ``compiler.core.names.MAX_NAME_BYTES``), else INVALID_ARGUMENT."""
    if not isinstance(value, str):
        raise invalid(f"{what} must be a string, got {value!r}")
    reason = path_unsafe_reason(value)
    if reason is not None:
        raise invalid(f"{what} {value!r} is not path-safe: {reason}")
    return value


def is_safe_name(value: str) -> bool:
    try:
        safe_name(value, "name")
    except ProviderError:
        return False
    return True


def id_parts(entry_id: object, kinds: Mapping[str, int]) -> tuple[str, list[str]]:
    """Split ``<kind>/<a>/<b>…`` into its kind and path-safe parts (count fixed per kind)."""
    if not isinstance(entry_id, str):
        raise invalid(f"entry id must be a string, got {entry_id!r}")
    kind, _, rest = entry_id.partition("/")
    if kind not in kinds:
        known = ", ".join(sorted(kinds))
        raise invalid(f"entry {entry_id!r}: this provider holds only kinds {known}")
    parts = rest.split("/")
    if len(parts) != kinds[kind]:
        raise invalid(f"entry id {entry_id!r} must have {kinds[kind]} part(s) after '{kind}/'")
    return kind, [safe_name(p, f"name in {kind} id") for p in parts]


def request_entry(params: Mapping[str, Any]) -> Mapping[str, Any]:
    """``params.entry`` of a create/update request, which must be an object with an id."""
    entry = params.get("entry")
    if not isinstance(entry, Mapping) or not isinstance(entry.get("id"), str):
        raise invalid("params.entry must be an entry object with an 'id'")
    return entry


def request_id(params: Mapping[str, Any]) -> str:
    """The target of a delete: ``params.id``, or the id of ``params.entry``."""
    if isinstance(params.get("id"), str):
        return str(params["id"])
    return str(request_entry(params)["id"])
