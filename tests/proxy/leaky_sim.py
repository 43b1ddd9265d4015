"""An exec provider for the proxy system tests: the cloud or license simulator, careless with
its credentials the way a real API client is.

``python3 -m tests.proxy.leaky_sim cloud|license`` answers as
``reconciler.testdoubles.sim_provider`` does (the same state, ledger and fencing), and puts
the value of every secret the request references and its environment resolves into the
places a proxy passes on: the ``info`` reply (published in the store), each change's reply
(written to the call queue and journaled by the apply), each error message, and its stderr.
A reference that does not resolve (CI's environment, which holds no secret) is skipped, so
the provider also answers where its secrets are absent. Nothing it echoes may reach the
store, a log or an output: the proxy redacts it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from compiler.core.secrets import SecretError, resolve
from reconciler.protocol import ProviderError, Reply, Request
from reconciler.testdoubles.sim_provider import handle


def _values(secrets: Mapping[str, Any]) -> list[str]:
    """The resolved value of each reference the request carries that resolves here."""
    found = []
    for ref in secrets.values():
        try:
            found.append(resolve(ref))
        except SecretError:
            continue
    return found


def answer(kind: str, req: Request) -> Reply:
    values = _values(req.secrets)
    try:
        reply = handle(kind, req)
    except ProviderError as err:
        reply = Reply.failure(err)
    if not values:
        return reply
    leak = ";".join(f"key={value}" for value in values)
    print(f"leaky_sim: {req.verb} with {leak}", file=sys.stderr)
    if not reply.ok:
        doc = reply.to_json()
        doc["error"]["message"] += f" ({leak})"
        return Reply.from_json(doc)
    if req.verb == "info":
        return Reply.success({**reply.result, "version": f"1 ({leak})"})
    if req.verb in ("inventory", "probe", "capacity"):
        return reply
    return Reply.success({**reply.result, "note": leak, "api_token": values[0]})


def main() -> int:
    kind = sys.argv[1] if len(sys.argv) > 1 else "cloud"
    reply = answer(kind, Request.from_json(json.loads(sys.stdin.read() or "null")))
    sys.stdout.write(json.dumps(reply.to_json()) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
