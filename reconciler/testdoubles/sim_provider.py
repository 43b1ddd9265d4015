"""``xce-sim-provider cloud|license``: a TEST DOUBLE standing in for a cloud account or a
license server, as an ``exec`` provider (one JSON request on stdin, one reply on stdout).

It keeps its account in ``state.json`` in its working folder (the provider's state
folder), honours op_id idempotency and epoch fencing like a real provider must, and
marks every instance with the owner tag of the site that created it. Set
``XCE_SIM_FAIL=<verb>`` to make a verb fail with UNAVAILABLE (for failure drills).
``xce-sim-provider cloud --failover [--at T]``, run in that folder, stands for a proxy
failover: from then on its inventory reports a new ``session`` since T (the settle window).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from compiler.cli_runner import UsageParser, run_cli
from reconciler.protocol import ErrorCode, ProviderError, Reply, Request

CAPABILITIES = {"cloud": ["instance"], "license": ["license-borrow"]}
STATE = Path("state.json")


def _load() -> dict[str, Any]:
    if STATE.exists():
        loaded: dict[str, Any] = json.loads(STATE.read_text())
        return loaded
    return {"generation": 1, "epoch": 0, "entries": {}, "ops": {}}


def _save(state: dict[str, Any]) -> None:
    tmp = STATE.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, sort_keys=True))
    os.replace(tmp, STATE)


def _entry(params: Any) -> dict[str, Any]:
    entry = params.get("entry") if isinstance(params, dict) else None
    if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
        raise ProviderError(ErrorCode.INVALID_ARGUMENT, "params.entry with an 'id' is required")
    return entry


def _change(state: dict[str, Any], req: Request) -> dict[str, Any]:
    entries: dict[str, Any] = state["entries"]
    if req.verb == "delete":
        ident = req.params.get("id") or _entry(req.params)["id"]
        current = entries.get(ident)
        if current is None:
            raise ProviderError(ErrorCode.NOT_FOUND, f"{ident} does not exist")
        if current.get("owner") != req.owner:
            raise ProviderError(ErrorCode.FAILED_PRECONDITION, f"{ident} belongs to another owner")
        del entries[ident]
        return {"id": ident, "deleted": True}
    entry = dict(_entry(req.params))
    if req.verb == "create" and entry["id"] in entries:
        raise ProviderError(ErrorCode.ALREADY_EXISTS, f"{entry['id']} already exists")
    if req.verb == "update" and entry["id"] not in entries:
        raise ProviderError(ErrorCode.NOT_FOUND, f"{entry['id']} does not exist")
    entry["owner"] = req.owner
    entry["state"] = "available"
    spec = dict(entry.get("spec") or {})
    spec.setdefault("instance_id", "i-" + hashlib.sha256(entry["id"].encode()).hexdigest()[:12])
    spec["since"] = int(time.time())
    entry["spec"] = spec
    entries[entry["id"]] = entry
    return {"entry": entry}


def handle(kind: str, req: Request) -> Reply:
    if os.environ.get("XCE_SIM_FAIL") == req.verb:
        raise ProviderError(ErrorCode.UNAVAILABLE, f"simulated outage of {req.verb}")
    with open(".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = _load()
        if req.verb == "info":
            return Reply.success(
                {
                    "name": f"sim-{kind}",
                    "version": "1",
                    "capabilities": CAPABILITIES[kind],
                    "verbs": [
                        "info",
                        "probe",
                        "inventory",
                        "create",
                        "update",
                        "delete",
                        "capacity",
                    ],
                }
            )
        if req.verb == "probe":
            return Reply.success({"ready": True})
        if req.verb == "capacity":
            return Reply.success({"total": 0, "used": 0, "free": 0})
        if req.verb == "inventory":
            return Reply.success(
                {
                    "generation": state["generation"],
                    "complete": True,
                    "entries": sorted(state["entries"].values(), key=lambda e: e["id"]),
                    **({"session": state["session"]} if "session" in state else {}),
                }
            )
        if req.verb not in ("create", "update", "delete"):
            raise ProviderError(ErrorCode.INVALID_ARGUMENT, f"unknown verb {req.verb!r}")
        if req.epoch < state["epoch"]:
            raise ProviderError(
                ErrorCode.ABORTED, f"stale epoch {req.epoch} (current {state['epoch']})"
            )
        state["epoch"] = req.epoch
        if req.op_id and req.op_id in state["ops"]:
            return Reply.from_json(state["ops"][req.op_id])
        reply = Reply.success(_change(state, req))
        if req.op_id:
            state["ops"][req.op_id] = reply.to_json()
        state["generation"] += 1
        _save(state)
        return reply


def failover(at: float) -> dict[str, Any]:
    """A standby proxy took over at ``at``: a new serving session, which the inventory
    reports from now on (a simulator with no failover yet reports none)."""
    with open(".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = _load()
        state["failovers"] = state.get("failovers", 0) + 1
        state["session"] = {"id": f"failover-{state['failovers']}", "since": at}
        _save(state)
        return dict(state["session"])


def _parser() -> UsageParser:
    p = UsageParser(prog="xce-sim-provider", description=__doc__.split("\n\n")[0] if __doc__
                    else None)
    p.add_argument("kind", nargs="?", default="cloud", choices=sorted(CAPABILITIES),
                   help="what it stands in for: a cloud account (instances) or a license "
                   "server (borrowed licenses); default: cloud")
    p.add_argument("--failover", action="store_true",
                   help="record a proxy failover in the current folder (the provider's state "
                   "folder) instead of answering a request: the inventory reports a new session")
    p.add_argument("--at", type=float, default=None, metavar="SECONDS",
                   help="with --failover: when it happened, in seconds since the epoch "
                   "(default: now)")
    return p


def _serve(kind: str) -> int:
    """Answer the one request on stdin."""
    try:
        req = Request.from_json(json.loads(sys.stdin.read() or "null"))
        reply = handle(kind, req)
    except ProviderError as err:
        reply = Reply.failure(err)
    except json.JSONDecodeError as err:
        reply = Reply.failure(ProviderError(ErrorCode.INVALID_ARGUMENT, f"bad JSON: {err}"))
    sys.stdout.write(json.dumps(reply.to_json()) + "\n")
    return 0


def _run(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    if not args.failover:
        return _serve(args.kind)
    session = failover(time.time() if args.at is None else args.at)
    sys.stdout.write(json.dumps(session) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_cli("xce-sim-provider", lambda: _run(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
