"""Bring live supply to the plan's outcome by calling the real providers directly.

This is the scenarios' way to *build* a live state (a site applied, a host drained …)
before the plan under test is made. It is deliberately not ``xce-apply``: no journal,
no locks, serial calls, and every call must succeed, so a scenario's setup never
depends on the applier being built in parallel, and a broken provider shows up here.
"""

from __future__ import annotations

import uuid
from typing import Any

from compiler.contract.supply_map import Entry
from reconciler.apply import ops
from reconciler.pipeline import Desired, compile_desired, gather, plan_for
from reconciler.plan.model import Action, Plan
from reconciler.protocol import Request
from reconciler.providers.registry import open_provider
from reconciler.transports import Transport
from tests.e2e.workspace import Workspace


def request_for(action: Action, epoch: int, owner: str) -> Request:
    """The applier's own request, under a fresh op_id and without the destroy permission."""
    return ops.request_for(action, uuid.uuid4().hex, epoch, owner)


def current_plan(ws: Workspace) -> tuple[Desired, Plan]:
    desired = compile_desired(ws.site)
    live = gather(desired, ws.workdir)
    assert not live.supply.unknown, f"setup needs every provider: {dict(live.supply.unknown)}"
    plan = plan_for(desired, live, now=ws.now())
    assert not plan.blocked, [p.message for p in plan.problems]
    return desired, plan


def apply_plan(ws: Workspace) -> Plan:
    """Plan against the live providers and carry out every action, in plan order."""
    desired, plan = current_plan(ws)
    ws.epoch += 1
    transports: dict[str, Transport] = {}
    failures: list[str] = []
    try:
        for action in plan.actions:
            name = action.provider or ""
            if name not in transports:
                transports[name] = open_provider(name, desired.bindings.binding(name),
                                                 ws.workdir)
            reply = transports[name].call(request_for(action, ws.epoch, desired.supply.owner))
            if not reply.ok:
                assert reply.error is not None
                failures.append(f"{action.id}: {reply.error.code.value} {reply.error.message}")
    finally:
        for transport in transports.values():
            transport.close()
    assert not failures, failures
    return plan


def create_as(ws: Workspace, provider: str, owner: str, entry: dict[str, Any]) -> Entry:
    """Create one entry at a provider under another owner tag (someone else's resource)."""
    desired = compile_desired(ws.site)
    transport = open_provider(provider, desired.bindings.binding(provider), ws.workdir)
    try:
        reply = transport.call(Request(verb="create", op_id=uuid.uuid4().hex, epoch=ws.epoch,
                                       owner=owner, params={"entry": entry}))
    finally:
        transport.close()
    assert reply.ok, reply.to_json()
    return Entry.from_json(reply.result["entry"])
