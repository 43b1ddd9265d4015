"""Requests to a provider in tests: the one definition of ``call`` and ``ok``.

A target is a transport (``call``) or a provider itself (``handle``), so the same helpers
drive an opened binding and a provider object built directly.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from reconciler.protocol import Reply, Request
from reconciler.transports import Handler, Transport


@runtime_checkable
class _Handles(Protocol):
    def handle(self, request: Request) -> Reply: ...


def call(target: Transport | Handler, verb: str, **fields: Any) -> Reply:
    """One request; ``fields`` are the other fields of the :class:`Request`, as given."""
    request = Request(verb=verb, **fields)
    if isinstance(target, _Handles):
        return target.handle(request)
    return target.call(request)


def succeeded(reply: Reply) -> dict[str, Any]:
    """The result of a reply that must be ok; the whole reply is the failure message."""
    assert reply.ok, reply.to_json()
    return dict(reply.result)


def ok(target: Transport | Handler, verb: str, **fields: Any) -> dict[str, Any]:
    """``call`` that must succeed, returning the reply's result."""
    return succeeded(call(target, verb, **fields))
