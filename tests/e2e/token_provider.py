"""An exec provider for the secrets test: the cloud simulator behind an API token.

It resolves its ``api_token`` credential from the reference the transport sends (refusing
to work without it, so a passing test proves the value reached it) and then misbehaves
the way a careless cloud API does: every instance it reports carries the token in its
metadata (``spec.api_token``, ``spec.auth.token``) and in the fields the planner compares,
once under a secret key (``attributes.api_token``) and once inside a plain value
(``attributes.note``). No plan, drift report or ledger row may show it.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from reconciler.protocol import ErrorCode, ProviderError, Reply, Request, resolve_secret
from reconciler.testdoubles.sim_provider import handle


def _token(req: Request) -> str:
    ref = req.secrets.get("api_token")
    token = resolve_secret(ref) if isinstance(ref, str) else ""  # errors name only the ref
    if not token:
        raise ProviderError(ErrorCode.UNAVAILABLE, "no api_token credential was passed")
    return token


def _leak(entry: dict[str, Any], token: str) -> dict[str, Any]:
    spec = {**entry.get("spec", {}), "api_token": token, "auth": {"token": token}}
    attributes = {**entry.get("attributes", {}), "api_token": token, "note": f"key={token};"}
    return {**entry, "spec": spec, "attributes": attributes}


def answer(req: Request) -> Reply:
    token = _token(req)
    reply = handle("cloud", req)
    if req.verb != "inventory" or not reply.ok:
        return reply
    entries = [_leak(e, token) for e in reply.result["entries"]]
    return Reply.success({**reply.result, "entries": entries})


def main() -> int:
    try:
        reply = answer(Request.from_json(json.loads(sys.stdin.read() or "null")))
    except ProviderError as err:
        reply = Reply.failure(err)
    sys.stdout.write(json.dumps(reply.to_json()) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
