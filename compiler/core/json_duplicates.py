"""Keys given twice in one JSON object. RFC 8259 leaves their meaning open and both fast
decoders here (orjson, msgspec) keep the last one silently, so a file from outside that
says a thing twice (``"state": "present", "state": "lost"``) is refused instead of read
one way: the reader of a live map asks ``duplicate_keys`` before it decodes.

The check is the standard library's C scanner with a hook that keeps nothing (about 0.6×
the time orjson takes to decode the same bytes); only a file that has duplicates is read a
second time, to say where they are.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

JsonPath = tuple[str | int, ...]


class _Found(Exception):
    """Raised by the first pass's hook at the first object that repeats a key."""


def _refuse_repeats(pairs: list[tuple[str, Any]]) -> None:
    if len(pairs) > 1 and len(dict(pairs)) != len(pairs):
        raise _Found


class _Repeats(dict[str, Any]):
    """An object of the second pass that repeats keys, with the keys it repeats."""

    repeated: list[str]


def _mark_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    marked = _Repeats(obj)
    marked.repeated = [k for k, n in Counter(k for k, _ in pairs).items() if n > 1]
    return marked


def has_repeats(data: bytes) -> bool:
    """Whether an object of ``data`` gives a key twice (False when it is not JSON)."""
    try:
        json.loads(data, object_pairs_hook=_refuse_repeats)
    except _Found:
        return True
    except (ValueError, RecursionError):  # not JSON, or too deep: the map's decoder says why
        return False
    return False


def _repeat_paths(doc: Any, limit: int) -> list[tuple[JsonPath, str]]:
    """Where the marked objects are, depth first, without recursion (any depth)."""
    found: list[tuple[JsonPath, str]] = []
    stack: list[tuple[JsonPath, Any]] = [((), doc)]
    while stack and len(found) < limit:
        path, value = stack.pop()
        if isinstance(value, _Repeats):
            found += [(path, key) for key in value.repeated]
        if isinstance(value, dict):
            stack += [((*path, k), v) for k, v in reversed(value.items())]
        elif isinstance(value, list):
            stack += [((*path, i), v) for i, v in reversed(list(enumerate(value)))]
    return found[:limit]


def duplicate_keys(data: bytes, limit: int = 100) -> list[tuple[JsonPath, str]]:
    """``(path of the object, key)`` for each key an object of ``data`` gives more than
    once, at most ``limit``; empty when there are none or ``data`` is not JSON."""
    if not has_repeats(data):
        return []
    return _repeat_paths(json.loads(data, object_pairs_hook=_mark_repeats), limit)
