"""Secrets never reach a rendering: a secret-looking key shows its reference or ``(sensitive)``.

Entries should hold secrets only by reference (``env:NAME``, ``file:PATH``); if a literal
slipped in anyway, the plan output still must not print it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

SENSITIVE = "(sensitive)"
_SECRET_KEY = re.compile(r"password|passwd|token|secret|key|credential", re.IGNORECASE)
_REFERENCE = re.compile(r"^(env|file):\S+$")


def is_secret_key(name: str) -> bool:
    return _SECRET_KEY.search(name) is not None


def _mask(value: Any) -> Any:
    if isinstance(value, str) and _REFERENCE.match(value):
        return value
    if isinstance(value, Mapping):
        return {k: _mask(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_mask(v) for v in value]
    return SENSITIVE


def redact(value: Any, key: str = "") -> Any:
    """``value`` as it may be shown, given the name of the key that holds it."""
    if key and is_secret_key(key):
        return _mask(value)
    if isinstance(value, Mapping):
        return {k: redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value


def redact_path(path: str, value: Any) -> Any:
    """A change's value, judged by every key on its dotted path (``spec.auth.token``)."""
    if any(is_secret_key(part) for part in path.split(".")):
        return _mask(value)
    return redact(value)
