"""A faulty provider: a real exec provider behind a proxy that spoils its inventory replies.

Usage: ``python fault_proxy.py MODE [--jsonl] -- COMMAND...``. Each request is passed to
``COMMAND`` (one exec call, as the real provider is run), and the reply of an
``inventory`` comes back spoiled as ``MODE`` says (``FAULTS`` below; the other verbs'
replies unchanged). Over ``--jsonl`` it serves one request per line, as a persistent
provider does. Standard library only: it runs as its own process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

Doc = dict[str, Any]
NOW = time.time()
OTHER = "site/elsewhere"


def _entries(doc: Doc) -> list[Any]:
    result = doc.setdefault("result", {})
    entries: list[Any] = result.setdefault("entries", [])
    return entries


def _result(change: Callable[[Doc], None]) -> Callable[[Doc], Doc]:
    def spoil(doc: Doc) -> Doc:
        change(doc.setdefault("result", {}))
        return doc
    return spoil


def _each(change: Callable[[Doc], None]) -> Callable[[Doc], Doc]:
    def spoil(doc: Doc) -> Doc:
        for entry in _entries(doc):
            if isinstance(entry, dict):
                change(entry)
        return doc
    return spoil


def _add(*extra: Doc) -> Callable[[Doc], Doc]:
    def spoil(doc: Doc) -> Doc:
        _entries(doc).extend(dict(e) for e in extra)
        return doc
    return spoil


def _keep(fraction: float) -> Callable[[Doc], Doc]:
    def spoil(doc: Doc) -> Doc:
        entries = _entries(doc)
        del entries[int(len(entries) * fraction):]
        return doc
    return spoil


def _both(*spoils: Callable[[Doc], Doc]) -> Callable[[Doc], Doc]:
    def spoil(doc: Doc) -> Doc:
        for one in spoils:
            doc = one(doc)
        return doc
    return spoil


def _instance(ident: str, **fields: Any) -> Doc:
    return {"id": ident, "kind": "instance", "state": "available", "source": "provisioner",
            "provider": "cloud", **fields}


def _error(code: str) -> Callable[[Doc], Doc]:
    return lambda doc: {"ok": False, "error": {"code": code, "message": "injected",
                                               "retryable": code == "UNAVAILABLE"}}


# Replies spoiled as documents (JSON changed).
SPOILED: dict[str, Callable[[Doc], Doc]] = {
    "incomplete": _both(_result(lambda r: r.update(complete=False)), _keep(0.5)),
    "incomplete-empty": _both(_result(lambda r: r.update(complete=False)), _keep(0)),
    "no-complete": _result(lambda r: r.pop("complete", None)),
    "no-generation": _result(lambda r: r.pop("generation", None)),
    "no-entries": _result(lambda r: r.pop("entries", None)),
    "empty-complete": _keep(0),
    "drop-one": _keep(0.99),
    "drop-half": _keep(0.5),
    "generation-zero": _result(lambda r: r.update(generation=0)),
    "generation-negative": _result(lambda r: r.update(generation=-5)),
    "generation-text": _result(lambda r: r.update(generation="7")),
    "generation-float": _result(lambda r: r.update(generation=1.5)),
    "generation-huge": _result(lambda r: r.update(generation=10**30)),
    "generation-down": _result(lambda r: r.update(generation=int(r.get("generation", 2)) - 1)),
    "duplicate-ids": lambda d: _add(*[e for e in _entries(d) if isinstance(e, dict)])(d),
    "entries-junk": _add(None, 1, "x", [], {}),  # type: ignore[arg-type]
    "entry-bad-types": _each(lambda e: e.update(amount="lots", kind=5)),
    "entry-huge-amount": _each(lambda e: e.update(amount=10**30)),
    "entry-no-id": _each(lambda e: e.pop("id", None)),
    "entry-nul-id": _each(lambda e: e.update(id=str(e.get("id")) + "\x00")),
    "owner-other": _each(lambda e: e.update(owner=OTHER)),
    "owner-none": _each(lambda e: e.pop("owner", None)),
    "foreign-host": _add(_instance("host/cn01", kind="host")),
    "foreign-volume": _add(_instance("volume/shared", kind="volume")),
    "foreign-dataset-copy": _add(_instance("dataset-copy/tiny@1@group/gpu",
                                           kind="dataset-copy")),
    "foreign-instance-other-owner": _add(_instance("instance/zz01", owner=OTHER)),
    "foreign-instance-no-owner": _add(_instance("instance/zz02")),
    "foreign-bad-ids": _add(_instance("instance/../../etc"), _instance(""),
                            _instance("instance/")),
    "session-new": _result(lambda r: r.update(session={"id": f"stress-{NOW}", "since": NOW})),
    "session-new-drop-half": _both(
        _result(lambda r: r.update(session={"id": f"stress-{NOW}", "since": NOW})),
        _keep(0.5)),
    "ok-false-no-error": lambda d: {"ok": False},
    "result-list": lambda d: {"ok": True, "result": []},
    "result-null": lambda d: {"ok": True, "result": None},
}
def _state(state: str) -> Callable[[Doc], Doc]:
    return _each(lambda e: e.update(state=state))


for _name in ("absent", "released", "lost", "deleted", "evicting", "draining", "gone"):
    SPOILED[f"state-{_name}"] = _state(_name)
for _code in ("UNAVAILABLE", "NOT_FOUND", "ABORTED", "INVALID_ARGUMENT", "FAILED_PRECONDITION",
              "RESOURCE_EXHAUSTED", "BOGUS"):
    SPOILED[f"error-{_code}"] = _error(_code)

# Replies spoiled as bytes, or not given at all.
RAW = ["crash-exit", "crash-kill", "crash-segv", "crash-half", "truncated-10", "truncated-50",
       "truncated-90", "garbage", "json-array", "json-null", "invalid-utf8", "two-replies",
       "slow", "silent", "flood", "stderr-flood", "wrong-id"]
FAULTS = [*SPOILED, *RAW]


def forward(command: list[str], line: bytes) -> bytes:
    """One exec call of the real provider (a JSON-lines request's id left out)."""
    req = json.loads(line)
    req.pop("id", None)
    run = subprocess.run(command, input=json.dumps(req).encode(), capture_output=True, check=False)
    sys.stderr.buffer.write(run.stderr)
    return run.stdout.strip()


def _die(how: int) -> None:
    sys.stdout.flush()
    os.kill(os.getpid(), how)


def raw(mode: str, reply: bytes, rid: Any) -> bytes | None:
    """The reply's bytes as ``mode`` spoils them; None: nothing more is written."""
    out = sys.stdout.buffer
    if mode == "crash-exit":
        sys.exit(3)
    if mode in ("crash-kill", "crash-segv"):
        _die(signal.SIGKILL if mode == "crash-kill" else signal.SIGSEGV)
    if mode == "crash-half":
        out.write(reply[:len(reply) // 2])
        out.flush()
        os._exit(0)
    if mode.startswith("truncated-"):
        return reply[:len(reply) * int(mode.split("-")[1]) // 100]
    if mode in ("slow", "silent"):
        time.sleep(3600)
    if mode == "flood":
        out.write(reply[:-2])
        while True:
            out.write(b', {"id": "instance/f", "kind": "instance", "state": "available"}' * 500)
    if mode == "stderr-flood":
        for _ in range(20_000):
            sys.stderr.write("e" * 1023 + "\n")
        return reply
    if mode == "wrong-id":
        doc = json.loads(reply)
        doc["id"] = (rid or 0) + 1 if isinstance(rid, int) else "other"
        return json.dumps(doc).encode()
    return {"garbage": b"\x00\xffnot json at all", "json-array": b"[]", "json-null": b"null",
            "invalid-utf8": reply.replace(b'"', b'"\xff', 1),
            "two-replies": reply + b"\n" + reply}[mode]


def _with_id(doc: Any, req: Doc) -> bytes:
    """A JSON-lines reply echoes its request's id (the exec provider behind knows none)."""
    if "id" in req and isinstance(doc, dict):
        doc["id"] = req["id"]
    return json.dumps(doc).encode()


def answer(mode: str, command: list[str], line: bytes) -> bytes | None:
    req = json.loads(line)
    reply = _with_id(json.loads(forward(command, line)), req)
    if req.get("verb") != "inventory":
        return reply
    if mode == "pass":
        return reply
    if mode in SPOILED:
        return _with_id(SPOILED[mode](json.loads(reply)), req)
    return raw(mode, reply, req.get("id"))


def main() -> None:
    args = sys.argv[1:]
    split = args.index("--")
    mode, jsonl, command = args[0], "--jsonl" in args[:split], args[split + 1:]
    requests = iter(sys.stdin.buffer.readline, b"") if jsonl else [sys.stdin.buffer.read()]
    for line in requests:
        if not line.strip():
            continue
        reply = answer(mode, command, line)
        if reply is not None:
            sys.stdout.buffer.write(reply + b"\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
