"""Helpers for the controller-map tests: a settable clock and short request builders."""

from __future__ import annotations

import itertools
from typing import Any

from reconciler.protocol import ErrorCode, Reply
from reconciler.providers.controller_map.provider import ControllerMapProvider
from tests import helpers
from tests.helpers import succeeded

OWNER = "site/hpc-east"
OTHER = "site/hpc-west"
T0 = 1_800_000_000.0
_ops = itertools.count(1)


class Clock:
    """``now`` for the provider; tests move it to see ``spec.since`` follow."""

    def __init__(self, start: float = T0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def call(
    provider: ControllerMapProvider,
    verb: str,
    *,
    op_id: str | None = None,
    epoch: int = 1,
    owner: str = OWNER,
    **params: Any,
) -> Reply:
    """One request; every call gets a fresh op_id unless the test names one."""
    op = op_id if op_id is not None else f"op-{next(_ops)}"
    return helpers.call(provider, verb, op_id=op, epoch=epoch, owner=owner, params=params)


def ok(provider: ControllerMapProvider, verb: str, **kw: Any) -> dict[str, Any]:
    """``call`` with these defaults, through the shared ``succeeded``."""
    return succeeded(call(provider, verb, **kw))


def refused(provider: ControllerMapProvider, verb: str, **kw: Any) -> ErrorCode:
    reply = call(provider, verb, **kw)
    assert not reply.ok and reply.error is not None, reply.to_json()
    return reply.error.code


def host(name: str, **attributes: Any) -> dict[str, Any]:
    """A desired host entry as the compiler emits it."""
    return {
        "id": f"host/{name}",
        "kind": "host",
        "state": "available",
        "source": "config",
        "provider": "controller",
        "attributes": {"group": "cpu", "features": ["avx2"], **attributes},
        "spec": {"join_deadline": 1800},
        "owner": OWNER,
    }


def counter(name: str, location: str, amount: int) -> dict[str, Any]:
    return {
        "id": f"counter/{name}@{location}",
        "kind": "counter",
        "state": "available",
        "source": "config",
        "provider": "controller",
        "location": location,
        "amount": amount,
        "owner": OWNER,
    }


def live(provider: ControllerMapProvider) -> dict[str, dict[str, Any]]:
    """The inventory's entries by id."""
    return {e["id"]: e for e in ok(provider, "inventory")["entries"]}


def generation(provider: ControllerMapProvider) -> int:
    return int(ok(provider, "inventory")["generation"])
