"""What one plan action becomes on the wire: its idempotency key and its provider request.

The op_id is derived from the plan's digest and the action's id, and the plan's digest from
its content and its own identity (``Plan.instance``, drawn when it is made, kept in its
file): applying the same plan again (after a crash) sends the same op_ids and providers
deduplicate them, while a new plan never reuses an old key — not even a plan equal to an
earlier one, as when the same drift comes back after it was fixed. Each plan verb travels
as its protocol verb
(``Verb.protocol``: ``create``/``update``/``delete``), with ``params.action`` set to the
plan verb when the two differ.
"""

from __future__ import annotations

from typing import Any

from compiler.core.canonical import digest_of
from reconciler.plan.model import Action, Plan
from reconciler.protocol import Request
from reconciler.state import PlannedOp


def plan_digest(plan: Plan) -> str:
    """Digest of this plan instance (its JSON and its identity): equal for a plan and the
    same plan loaded from its file, different for two plans of equal content."""
    return digest_of({"instance": plan.instance, "plan": plan.to_json()})


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
