"""Secrets only by reference: a literal credential in site-config is an error (never echoed)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from compiler.model.document import SiteDocument
from compiler.model.types import SECRET_REF_RE
from compiler.problems import Problems, Where

SECRET_KEY_RE = re.compile(
    r"(pass(word|wd)?|secret|token|api[_-]?key|private[_-]?key|credential|auth)", re.I
)


def _walk_params(params: Mapping[str, Any], where: Where, problems: Problems) -> None:
    for key, value in params.items():
        at = where.child(key)
        if isinstance(value, Mapping):
            _walk_params(value, at, problems)
        elif (
            SECRET_KEY_RE.search(str(key))
            and isinstance(value, str | int)
            and not (isinstance(value, str) and SECRET_REF_RE.match(value))
        ):
            problems.error(
                "XCE407",
                f"'{key}' looks like a secret and has a literal value (not shown)",
                "move the value to credentials as a reference: env:NAME or file:/path",
                at,
            )


def check_secrets(doc: SiteDocument, problems: Problems) -> None:
    for p in doc.providers:
        for key, ref in p.item.credentials.items():
            if not SECRET_REF_RE.match(ref):
                problems.error(
                    "XCE407",
                    f"credential '{key}' of provider '{p.item.name}' is not a reference "
                    "(the value is not shown)",
                    "write env:NAME (an environment variable) or file:/path (a file) instead",
                    p.where.child("credentials", key),
                )
        _walk_params(p.item.params, p.where.child("params"), problems)
