"""Secrets only by reference: a literal credential in site-config is an error (never echoed).

What counts as a secret key and as a reference is ``compiler.core.secrets``' rule, the same one
every output redacts by.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from compiler.core import codes
from compiler.core.problems import Problems, Where
from compiler.core.secrets import REFERENCE_FORMS, is_reference, is_secret_key
from compiler.model.document import SiteDocument


def _walk_params(params: Any, where: Where, problems: Problems, secret_key: str = "") -> None:
    """Every literal under a secret-like key, in mappings and lists at any depth."""
    if isinstance(params, Mapping):
        for key, value in params.items():
            named = str(key) if is_secret_key(str(key)) else secret_key
            _walk_params(value, where.child(str(key)), problems, named)
    elif isinstance(params, list):
        for i, value in enumerate(params):
            _walk_params(value, where.child(i), problems, secret_key)
    elif (
        secret_key
        and isinstance(params, str | int | float)
        and not isinstance(params, bool)
        and not is_reference(params)
    ):
        problems.error(
            codes.LITERAL_SECRET,
            f"'{secret_key}' looks like a secret and has a literal value (not shown)",
            f"move the value to credentials as a reference: {REFERENCE_FORMS}",
            where,
        )


def check_secrets(doc: SiteDocument, problems: Problems) -> None:
    for p in doc.providers:
        for key, ref in p.item.credentials.items():
            if not is_reference(ref):
                problems.error(
                    codes.LITERAL_SECRET,
                    f"credential '{key}' of provider '{p.item.name}' is not a reference "
                    "(the value is not shown)",
                    "write env:NAME (an environment variable) or file:/path (a file) instead",
                    p.where.child("credentials", key),
                )
        _walk_params(p.item.params, p.where.child("params"), problems)
