"""``--format json``: the plan JSON of BRIEF §3 (actions, summary, reported lists)."""

from __future__ import annotations

from typing import Any

from compiler.core.canonical import dumps
from reconciler.plan.model import Plan


def plan_json(plan: Plan) -> dict[str, Any]:
    doc = plan.to_json()
    doc["blocked"] = plan.blocked
    return doc


def render_json(plan: Plan) -> str:
    return dumps(plan_json(plan)).decode()
