"""Canonical JSON: sorted keys, fixed indentation, so identical inputs give identical bytes."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

_OPTS = orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE


def dumps(doc: Any) -> bytes:
    return orjson.dumps(doc, option=_OPTS)


def dumps_compact(doc: Any) -> bytes:
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def digest_of(doc: Any) -> str:
    return digest(dumps_compact(doc))
