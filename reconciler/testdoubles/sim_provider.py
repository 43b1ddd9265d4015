"""``python3 -m reconciler.testdoubles.sim_provider cloud|license``: a TEST DOUBLE standing
in for a cloud account or a license server, as an ``exec`` provider (one JSON request on
stdin, one reply on stdout). Not a command on users' PATH: a site binds it by module.

It keeps its account in ``state.json`` in its working folder (the provider's state
folder) and answers through the in-process providers' skeleton
(``reconciler.providers.base``): op_id idempotency, epoch fencing, and owner fencing —
every instance carries the owner tag of the site that created it, and no other site's
request changes it. Set
``XCE_SIM_FAIL=<verb>`` to make a verb fail with UNAVAILABLE (for failure drills).
``… sim_provider cloud --failover [--at T]``, run in that folder, stands for a proxy
failover: from then on its inventory reports a new ``session`` since T (the settle window).
"""

from __future__ import annotations

import copy
import fcntl
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from compiler.cli.runner import UsageParser, run_cli
from compiler.contract.vocabulary import EntryKind, HostState
from reconciler.protocol import ErrorCode, ProviderError, Reply, Request
from reconciler.providers.base import ProviderSkeleton
from reconciler.providers.names import request_entry, request_id
from reconciler.providers.opledger import fence, recorded

STATE = Path("state.json")
# Why the simulator offers none of the optional capabilities (docs/providers.md).
UNSUPPORTED = {
    "publish": "a simulated instance or borrowed license is not mounted anywhere",
    "expand": "a simulated instance has the size its template gives it; a new size is an update",
    "snapshot": "the simulator holds records of instances and licenses, nothing to copy",
    "topology": "the simulated account has no racks or switches; site-config places the hosts",
}


def _load() -> dict[str, Any]:
    if STATE.exists():
        loaded: dict[str, Any] = json.loads(STATE.read_text())
        return loaded
    return {"generation": 1, "epoch": 0, "entries": {}, "ops": {}}


def _save(state: dict[str, Any]) -> None:
    tmp = STATE.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, sort_keys=True))
    os.replace(tmp, STATE)


@contextmanager
def _locked() -> Iterator[dict[str, Any]]:
    """The account, read and written under the state folder's lock; saved when done."""
    with open(".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = _load()
        yield state
        _save(state)


class Account:
    """The account file as the skeleton's ``Book``: op_ids with their fingerprints and
    results (``ops``), the highest epoch, and the entries with their owner tags."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.state = state

    def check_epoch(self, epoch: int) -> None:
        if fence(epoch, int(self.state["epoch"])):
            self.state["epoch"] = epoch

    def replay(self, op_id: str, fingerprint: str) -> Mapping[str, Any] | None:
        row = self.state["ops"].get(op_id)
        known = (str(row[0]), str(row[1])) if isinstance(row, list) and len(row) == 2 else None
        text = recorded(op_id, known, fingerprint)
        return None if text is None else dict(json.loads(text))

    def record(self, op_id: str, fingerprint: str, result: Mapping[str, Any]) -> None:
        self.state["ops"][op_id] = [fingerprint, json.dumps(result)]

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """A failed change leaves the account as it was (the epoch stays seen)."""
        before = copy.deepcopy({k: self.state[k] for k in ("entries", "generation")})
        try:
            yield
        except BaseException:
            self.state.update(before)
            raise


class Simulator(ProviderSkeleton[Account]):
    """The simulated account through the one provider skeleton: epoch, op_id replay and
    owner fencing as every in-process provider has them."""

    unsupported: ClassVar[Mapping[str, str]] = UNSUPPORTED

    def __init__(self) -> None:
        super().__init__(f"sim-{self.kind}", None, Path.cwd())  # it takes no params

    @contextmanager
    def book(self) -> Iterator[Account]:
        with _locked() as state:
            yield Account(state)

    def holder(self, book: Account, entry_id: str) -> str | None:
        current = book.state["entries"].get(entry_id)
        return (current.get("owner") or None) if isinstance(current, dict) else None

    def change(self, book: Account, request: Request) -> dict[str, Any]:
        entries: dict[str, Any] = book.state["entries"]
        book.state["generation"] += 1
        if request.verb == "delete":
            ident = request_id(request.params)
            if ident not in entries:
                raise ProviderError(ErrorCode.NOT_FOUND, f"{ident} does not exist")
            del entries[ident]
            return {"id": ident, "deleted": True}
        entry = dict(request_entry(request.params))
        if request.verb == "create" and entry["id"] in entries:
            raise ProviderError(ErrorCode.ALREADY_EXISTS, f"{entry['id']} already exists")
        if request.verb == "update" and entry["id"] not in entries:
            raise ProviderError(ErrorCode.NOT_FOUND, f"{entry['id']} does not exist")
        entry.update(owner=request.owner or None, state=HostState.AVAILABLE.value)
        spec = dict(entry.get("spec") or {})
        spec.setdefault("instance_id", "i-" + hashlib.sha256(entry["id"].encode()).hexdigest()[:12])
        # when it was made, to the microsecond: it names the instance (planner/backoff), and
        # a test's instances come and go within a second, where a real cloud's are minutes apart
        spec["since"] = time.time()
        entry["spec"] = spec
        entries[entry["id"]] = entry
        return {"entry": entry}

    def inventory_result(self, params: Mapping[str, Any]) -> dict[str, Any]:
        with _locked() as state:
            return {"generation": state["generation"], "complete": True,
                    "entries": sorted(state["entries"].values(), key=lambda e: e["id"]),
                    **({"session": state["session"]} if "session" in state else {})}

    def capacity(self, params: Mapping[str, Any]) -> dict[str, int]:
        return {"total": 0, "used": 0, "free": 0}

    def close(self) -> None:
        pass


class CloudSimulator(Simulator):
    kind = "cloud"
    capabilities = (EntryKind.INSTANCE.value,)


class LicenseSimulator(Simulator):
    kind = "license"
    capabilities = ("license-borrow",)


SIMULATORS: dict[str, type[Simulator]] = {"cloud": CloudSimulator, "license": LicenseSimulator}


def handle(kind: str, req: Request) -> Reply:
    if os.environ.get("XCE_SIM_FAIL") == req.verb:
        raise ProviderError(ErrorCode.UNAVAILABLE, f"simulated outage of {req.verb}")
    return SIMULATORS[kind]().handle(req)


def failover(at: float) -> dict[str, Any]:
    """A standby proxy took over at ``at``: a new serving session, which the inventory
    reports from now on (a simulator with no failover yet reports none)."""
    with _locked() as state:
        state["failovers"] = state.get("failovers", 0) + 1
        state["session"] = {"id": f"failover-{state['failovers']}", "since": at}
        return dict(state["session"])


def _parser() -> UsageParser:
    p = UsageParser(prog="python3 -m reconciler.testdoubles.sim_provider",
                    description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("kind", nargs="?", default="cloud", choices=sorted(SIMULATORS),
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
    return run_cli("sim_provider", lambda: _run(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
