"""Saved plans signed with a key of the state store they were made against (HMAC-SHA256).

A plan file's digest shows that it is whole, but whoever can write the file can recompute
it. The signature is an HMAC of that digest under a key only the state store holds (table
``plan_signing_key``, drawn once per store, never printed), so a plan file that verifies
was made by someone with access to this store and is unchanged since. It is not an
approval: review is ``xce-plan --record`` / ``xce-apply --reviewed`` (docs/plan.md, "Plan
file"). HMAC over the SHA-256 digest of the canonical body is as strong as over the body,
and costs nothing more for a plan of half a million actions.
"""

from __future__ import annotations

import hashlib
import hmac

from compiler.core.problems import UserError
from reconciler.plan import codes

SCHEME = "hmac-sha256"


def sign(key: bytes, digest: str) -> str:
    """The signature of a plan file whose body has ``digest``."""
    return f"{SCHEME}:{hmac.new(key, digest.encode(), hashlib.sha256).hexdigest()}"


def check_signature(signature: str | None, digest: str, key: bytes, *, source: str,
                    store: str) -> None:
    """Refuse (XCE773) a plan that is not signed, or not with ``key`` (the key of the state
    store named ``store``): it was edited after it was made, or made against another store."""
    if signature is None:
        raise UserError([codes.problem(
            codes.PLAN_UNSIGNED, "the plan file is not signed, so nothing shows it was made "
            f"against {store} and is unchanged since; it is not applied", source)])
    if not hmac.compare_digest(signature.encode(), sign(key, digest).encode()):
        raise UserError([codes.problem(
            codes.PLAN_UNSIGNED, "the plan file's signature does not match the key of "
            f"{store}: the plan was changed after it was made, or signed by another store; "
            "it is not applied", source)])
