"""What one plan action becomes on the wire: its idempotency key and its provider request.

The op_id is derived from the plan's digest and the action's id, so applying the same plan
again (after a crash) sends the same op_ids and providers deduplicate them, while a new
plan never reuses an old key. Plan verbs map onto the protocol verbs as
docs/architecture.md says: ``stage``/``admit``/``drain``/``evict``/``release``/``reject``
travel as ``create``/``update``/``delete`` with ``params.action`` set to the plan verb.
"""

from __future__ import annotations

from typing import Any

from compiler.canonical import digest_of
from reconciler.plan.model import Action, Plan
from reconciler.protocol import Request
from reconciler.state import PlannedOp

PROTOCOL_VERB = {
    "create": "create",
    "stage": "create",
    "admit": "update",
    "update": "update",
    "drain": "update",
    "delete": "delete",
    "evict": "delete",
    "release": "delete",
    "reject": "delete",
}


def plan_digest(plan: Plan) -> str:
    """Digest of the plan's JSON: equal for a plan and the same plan loaded from its file."""
    return digest_of(plan.to_json())


def op_id(digest: str, action: Action) -> str:
    return digest_of({"plan": digest, "action": action.id}).removeprefix("sha256:")


def planned_op(op: str, action: Action) -> PlannedOp:
    return PlannedOp(op, action.action, action.entry, action.provider or "")


def request_for(action: Action, op: str, epoch: int, owner: str, *,
                destroy: bool = False) -> Request:
    """The provider request that carries out ``action`` under ``op`` and ``epoch``.

    ``destroy`` (the run may destroy) lets a delete remove what holds data, such as a
    user's directory; without it the provider refuses and nothing is lost."""
    verb = PROTOCOL_VERB.get(action.action)
    if verb is None:
        raise ValueError(f"unknown plan verb {action.action!r}")
    params: dict[str, Any] = {}
    if verb != "create":
        params["id"] = action.entry
    entry = action.before if verb == "delete" else (action.after or action.before)
    if entry is not None:
        params["entry"] = dict(entry)
    if action.action != verb:
        params["action"] = action.action
    if verb == "delete" and destroy:
        params["destroy"] = True
    return Request(verb=verb, op_id=op, epoch=epoch, owner=owner, params=params)
