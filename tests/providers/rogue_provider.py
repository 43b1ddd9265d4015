"""A provider process that misbehaves on purpose, over exec or JSON lines (``--jsonl``).

Usage: ``python rogue_provider.py MODE [--jsonl] [--size N]``. Each request is read, then:

- ``flood``: the start of an inventory reply, then entries on stdout without end;
- ``sized``: a valid inventory reply padded to exactly ``--size`` bytes (newline excluded);
- ``chatter``: ``--size`` bytes of stderr lines, then a valid reply;
- ``leak``: the resolved ``token`` secret on stderr in every way a careless provider
  prints it (alone, inside a line, split across writes with a pause between them, in
  JSON, as the last line before it exits), then a valid reply.

Standard library only: it runs as its own process, as a real provider would.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

ENTRY = b'{"id": "note/x", "kind": "note", "state": "available", "source": "provisioner"},'


def _secret(req: dict[str, Any]) -> str:
    kind, _, name = str((req.get("secrets") or {}).get("token", "")).partition(":")
    if kind == "env":
        return os.environ[name]
    with open(name, encoding="utf-8") as fh:
        return fh.read().strip()


def _reply(rid: object, size: int = 0) -> bytes:
    doc: dict[str, Any] = {"ok": True, "result": {"generation": 1, "complete": True,
                                                  "entries": [], "pad": ""}}
    if rid is not None:
        doc["id"] = rid
    base = len(json.dumps(doc).encode())
    doc["result"]["pad"] = "x" * max(0, size - base)
    return json.dumps(doc).encode()


def _err(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()


def _leak(token: str) -> None:
    _err(f"{token}\n")
    _err(f"login with token={token} refused\n")
    half = len(token) // 2
    _err(f"retrying with {token[:half]}")
    time.sleep(0.3)  # the rest arrives in a later read
    _err(f"{token[half:]} now\n")
    _err(json.dumps({"config": {"token": token}}) + "\n")
    _err(f"last words: {token}")  # no newline: the end of the stream ends the line


def answer(mode: str, req: dict[str, Any], size: int) -> bytes:
    rid = req.get("id")
    out = sys.stdout.buffer
    if mode == "flood":
        out.write(b'{"ok": true, "result": {"generation": 1, "complete": true, "entries": [')
        while True:
            out.write(ENTRY * 1000)
    if mode == "chatter":
        line = b"e" * 1023 + b"\n"
        for _ in range(size // len(line)):
            sys.stderr.buffer.write(line)
        sys.stderr.flush()
    if mode == "leak":
        _leak(_secret(req))
    return _reply(rid, size if mode == "sized" else 0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["flood", "sized", "chatter", "leak"])
    ap.add_argument("--jsonl", action="store_true")
    ap.add_argument("--size", type=int, default=0)
    args = ap.parse_args()
    requests = sys.stdin if args.jsonl else [sys.stdin.read()]
    for line in requests:
        sys.stdout.buffer.write(answer(args.mode, json.loads(line), args.size) + b"\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
