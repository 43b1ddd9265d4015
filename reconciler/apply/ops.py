"""What one plan action becomes on the wire: its idempotency key and its provider request.

The op_id is derived from the plan's digest and the action's id, so applying the same plan
again (after a crash) sends the same op_ids and providers deduplicate them, while a new
plan never reuses an old key. Each plan verb travels as its protocol verb
(``Verb.protocol``: ``create``/``update``/``delete``), with ``params.action`` set to the
plan verb when the two differ.
"""

from __future__ import annotations

from typing import Any

from compiler.canonical import digest_of
from reconciler.plan.model import Action, Plan
from reconciler.protocol import Request
from reconciler.state import PlannedOp


def plan_digest(plan: Plan) -> str:
    """Digest of the plan's JSON: equal for a plan and the same plan loaded from its file."""
    return digest_of(plan.to_json())


def op_id(digest: str, action: Action) -> str:
    return digest_of({"plan": digest, "action": action.id}).removeprefix("sha256:")


def planned_op(op: str, action: Action) -> PlannedOp:
    return PlannedOp(op, action.verb.value, action.entry, action.provider or "")


def request_for(action: Action, op: str, epoch: int, owner: str, *,
                destroy: bool = False) -> Request:
    """The provider request that carries out ``action`` under ``op`` and ``epoch``.

    ``destroy`` (the run may destroy) lets a delete remove what holds data, such as a
    user's directory; without it the provider refuses and nothing is lost."""
    verb = action.verb.protocol
    params: dict[str, Any] = {}
    if verb != "create":
        params["id"] = action.entry
    entry = action.before if verb == "delete" else (action.after or action.before)
    if entry is not None:
        params["entry"] = dict(entry)
    if action.verb != verb:
        params["action"] = action.verb.value
    if verb == "delete" and destroy:
        params["destroy"] = True
    return Request(verb=verb, op_id=op, epoch=epoch, owner=owner, params=params)
