"""A test provider for the apply (exec transport): slow, deduplicating, fenced, faulty on demand.

Usage: ``python slow_provider.py STATE_DIR``; one JSON request on stdin, one reply on stdout.
STATE_DIR holds ``state.json`` (entries, applied op_ids, highest epoch), ``faults.json``
(``{"<entry id>": {"code": "UNAVAILABLE", "times": 2}}``: fail that many calls; with
``"after": true`` the change is made first and only the reply fails, as when a reply is
lost; a list of such faults is served in order), and logs:
``executed.log`` gets one line per *effective* change (a repeated op_id is not one),
``calls.log`` one line per mutating call received. ``delay`` (seconds) in ``config.json``
is slept per mutating call before the change, outside the lock, so calls overlap;
``slow`` maps entry ids to their own delay; calls for an entry listed in ``hold`` then wait
for the test to let go of ``gate`` (a test decides when a call in flight completes).
Events for a test waiting on them (tests/apply/events.py): a line to the FIFO ``events``,
if a test reads one, at each call received and each change made; the lock ``busy`` held
shared while the process works.
Standard library only: it runs as its own process like a real provider would.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any


def _read(path: Path, default: Any) -> Any:
    return json.loads(path.read_text()) if path.exists() else default


def _write(path: Path, doc: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, sort_keys=True))
    os.replace(tmp, path)


def _log(path: Path, line: str) -> None:
    with open(path, "a") as fh:
        fh.write(line + "\n")


def _fail(code: str, message: str) -> dict[str, Any]:
    retryable = code in ("UNAVAILABLE", "DEADLINE_EXCEEDED")
    return {"ok": False, "error": {"code": code, "message": message, "retryable": retryable}}


def _change(state: dict[str, Any], req: dict[str, Any]) -> dict[str, Any]:
    params = req.get("params") or {}
    entry = params.get("entry") or {}
    entry_id = params.get("id") or entry.get("id")
    entries = state["entries"]
    if req["verb"] == "delete":
        if entry_id not in entries:
            return _fail("NOT_FOUND", f"{entry_id} does not exist")
        del entries[entry_id]
        return {"ok": True, "result": {"entry": None}}
    if req["verb"] == "create" and entry_id in entries:
        return _fail("ALREADY_EXISTS", f"{entry_id} already exists")
    stored = {**entry, "owner": req.get("owner") or None}
    entries[entry_id] = stored
    return {"ok": True, "result": {"entry": stored}}


def handle(home: Path, req: dict[str, Any]) -> dict[str, Any]:
    verb = req.get("verb")
    if verb == "inventory":
        with open(home / ".lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            state = _read(home / "state.json", {"entries": {}, "ops": {}, "epoch": 0, "gen": 0})
        entries = sorted(state["entries"].values(), key=lambda e: e["id"])
        return {"ok": True, "result": {"generation": state["gen"], "complete": True,
                                       "entries": entries}}
    if verb not in ("create", "update", "delete"):
        return _fail("INVALID_ARGUMENT", f"unknown verb {verb!r}")
    params = req.get("params") or {}
    entry_id = params.get("id") or (params.get("entry") or {}).get("id")
    _log(home / "calls.log", f"{time.time():.4f} {os.getpid()} {req['op_id']} {verb} {entry_id}")
    _ring(home)
    config = _read(home / "config.json", {})
    time.sleep(float(config.get("slow", {}).get(entry_id, config.get("delay", 0))))
    if entry_id in config.get("hold", ()) and not _let_go(home / "gate"):
        return _fail("DEADLINE_EXCEEDED", f"{entry_id} was held and never let go")
    with open(home / ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = _read(home / "state.json", {"entries": {}, "ops": {}, "epoch": 0, "gen": 0})
        if req.get("epoch", 0) < state["epoch"]:
            return _fail("ABORTED", f"stale epoch {req.get('epoch')} (seen {state['epoch']})")
        state["epoch"] = req.get("epoch", 0)
        _write(home / "state.json", state)
        faults = _read(home / "faults.json", {})
        fault = _next_fault(faults, entry_id)
        if fault and not fault.get("after"):  # unreachable: not even deduplicated
            return _injected(home, faults, fault, entry_id)
        if req["op_id"] in state["ops"]:
            reply: dict[str, Any] = state["ops"][req["op_id"]]
            return reply
        reply = _change(state, req)
        if reply["ok"]:
            state["ops"][req["op_id"]] = reply
            state["gen"] += 1
            _log(home / "executed.log", f"{req['op_id']} {verb} {entry_id}")
        _write(home / "state.json", state)
        _ring(home)
        if fault:
            return _injected(home, faults, fault, entry_id)
        return reply


def _ring(home: Path) -> None:
    """Wake a test waiting on the FIFO ``events``, if one is there and read."""
    try:
        fd = os.open(home / "events", os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # no FIFO, or nobody reading it
        return
    try:
        os.write(fd, b"\n")
    except BlockingIOError:  # full: a waiter has rings enough
        pass
    finally:
        os.close(fd)


def _let_go(gate: Path, seconds: int = 60) -> bool:
    """Wait until the test lets go of ``gate`` (it holds the file locked until then);
    False after ``seconds``."""
    def expired(signum: int, frame: object) -> None:
        raise TimeoutError

    signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        with open(gate, "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_SH)
        return True
    except TimeoutError:
        return False
    finally:
        signal.alarm(0)


def _next_fault(faults: dict[Any, Any], entry_id: str | None) -> dict[str, Any] | None:
    """The first fault of ``entry_id`` still to be served (one, or a list taken in order)."""
    planned = faults.get(entry_id) or []
    for fault in planned if isinstance(planned, list) else [planned]:
        if fault["times"] > 0:
            return dict(fault)
    return None


def _injected(home: Path, faults: dict[Any, Any], fault: dict[str, Any],
              entry_id: str | None) -> dict[str, Any]:
    planned = faults[entry_id]
    for served in planned if isinstance(planned, list) else [planned]:
        if served["times"] > 0:
            served["times"] -= 1
            break
    _write(home / "faults.json", faults)
    return _fail(fault["code"], f"injected fault for {entry_id}")


def main() -> None:
    home = Path(sys.argv[1])
    with open(home / "busy", "a") as busy:
        fcntl.flock(busy, fcntl.LOCK_SH)
        req = json.loads(sys.stdin.read())
        sys.stdout.write(json.dumps(handle(home, req)) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
