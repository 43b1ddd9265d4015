"""``--format json``: the plan JSON of BRIEF §3 (actions, summary, reported lists), redacted."""

from __future__ import annotations

from typing import Any

from compiler.canonical import dumps
from reconciler.plan.model import Plan
from reconciler.plan.render.redact import redact, redact_path


def _action(doc: dict[str, Any]) -> dict[str, Any]:
    doc["before"] = redact(doc["before"])
    doc["after"] = redact(doc["after"])
    for change in doc["changes"]:
        change["before"] = redact_path(change["path"], change["before"])
        change["after"] = redact_path(change["path"], change["after"])
    return doc


def plan_json(plan: Plan) -> dict[str, Any]:
    doc = plan.to_json()
    doc["actions"] = [_action(a) for a in doc["actions"]]
    doc["blocked"] = plan.blocked
    return doc


def render_json(plan: Plan) -> str:
    return dumps(plan_json(plan)).decode()
