"""A small external provider for the tests: holds ``note/<name>`` entries in a JSON file.

It speaks the provider protocol the way docs/providers.md tells an exec or JSON-lines
provider to: op_id dedupe, epoch fencing, owner fencing (a note another site made is never
changed), a generation that grows with each new snapshot, secrets resolved by itself from
references, and of the optional capabilities ``topology``: a note is made at one of its
``PLACES`` that the request's topology allows, and reported there
(``attributes.topology``); the others it refuses as UNIMPLEMENTED.
``--mode`` makes it misbehave (hang, crash, lie) so the transports and the live map can be
tested against it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from typing import Any

VERBS = ["info", "probe", "inventory", "create", "update", "delete", "capacity"]
PLACES = [{"rack": "r1", "switch": "s1"}, {"rack": "r2", "switch": "s1"}]  # where notes can be
UNSUPPORTED = {
    "publish": "a note is not mounted anywhere",
    "expand": "a note has the amount it was given",
    "snapshot": "a note is too small to need one",
}


def error(code: str, message: str) -> dict[str, Any]:
    retryable = code in ("UNAVAILABLE", "DEADLINE_EXCEEDED")
    return {"ok": False, "error": {"code": code, "message": message, "retryable": retryable}}


class Notes:
    def __init__(self, name: str, state_path: str, mode: str) -> None:
        self.name = name
        self.path = state_path
        self.mode = mode

    def load(self) -> dict[str, Any]:
        try:
            with open(self.path, encoding="utf-8") as fh:
                state: dict[str, Any] = json.load(fh)
                return state
        except FileNotFoundError:
            return {"epoch": 0, "ops": {}, "entries": {}, "generation": 0, "snapshot": ""}

    def save(self, state: dict[str, Any]) -> None:
        tmp = f"{self.path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(state, fh)
        os.replace(tmp, self.path)

    def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        verb = req.get("verb")
        if self.mode == "slow":
            child = subprocess.Popen(["sleep", "30"])  # a grandchild the kill must reach too
            with open(f"{self.path}.pids", "w", encoding="utf-8") as fh:
                fh.write(f"{os.getpid()} {child.pid}")
            time.sleep(30)
        if self.mode == f"crash-on-{verb}":
            sys.stderr.write("notes provider: crashing as asked\n")
            sys.stderr.flush()
            os._exit(3)
        state = self.load()
        if verb == "info":
            return {"ok": True, "result": self.info(req)}
        if verb == "probe":
            return {"ok": True, "result": {"ready": True}}
        if verb == "capacity":
            used = len(state["entries"])
            return {"ok": True, "result": {"total": 100, "used": used, "free": 100 - used}}
        if verb == "inventory":
            return {"ok": True, "result": self.inventory(state)}
        if verb in ("create", "update", "delete"):
            return self.mutate(state, req)
        if verb in ("publish", "unpublish", "expand", "snapshot"):
            cap = "publish" if verb == "unpublish" else verb
            return error("UNIMPLEMENTED", f"provider {self.name!r} does not offer {verb} "
                         f"(optional capability {cap!r}): {UNSUPPORTED[cap]}")
        return error("INVALID_ARGUMENT", f"unknown verb {verb!r}")

    def info(self, req: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = {
            "name": self.name, "version": "1", "capabilities": ["note"], "verbs": VERBS,
            "optional": {"topology": {"kinds": ["note"], "places": PLACES}},
            "unsupported": UNSUPPORTED, "pid": os.getpid(),
        }
        ref = (req.get("secrets") or {}).get("token")
        if ref is not None:
            from reconciler.protocol import resolve_secret

            result["token_reference"] = ref
            result["token_sha256"] = hashlib.sha256(resolve_secret(ref).encode()).hexdigest()
        return result

    def inventory(self, state: dict[str, Any]) -> dict[str, Any]:
        entries = [{**state["entries"][k], "provider": self.name} for k in sorted(state["entries"])]
        if self.mode == "bad-entry":
            entries = [{"id": "note/x", "kind": "note"}]
        digest = hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest()
        if digest != state["snapshot"]:
            state["generation"] += 1
            state["snapshot"] = digest
            self.save(state)
        return {
            "generation": state["generation"],
            "complete": self.mode != "partial",
            "entries": entries,
        }

    def mutate(self, state: dict[str, Any], req: dict[str, Any]) -> dict[str, Any]:
        op_id, epoch, verb = req.get("op_id") or "", int(req.get("epoch") or 0), req["verb"]
        if not op_id:
            return error("INVALID_ARGUMENT", f"{verb} needs an op_id")
        if epoch < state["epoch"]:
            return error("ABORTED", f"stale epoch {epoch} < {state['epoch']}")
        state["epoch"] = epoch
        if op_id in state["ops"]:
            self.save(state)
            return {"ok": True, "result": state["ops"][op_id]}
        params = req.get("params") or {}
        entry_id = params.get("id") or (params.get("entry") or {}).get("id")
        if not isinstance(entry_id, str) or not entry_id.startswith("note/"):
            return error("INVALID_ARGUMENT", "this provider holds only note/<name> entries")
        holder = (state["entries"].get(entry_id) or {}).get("owner")
        if holder and holder != (req.get("owner") or ""):  # never change another site's note
            self.save(state)  # the epoch just seen stays remembered
            return error("FAILED_PRECONDITION", f"{entry_id} is owned by '{holder}', not "
                         f"'{req.get('owner') or '(no owner)'}'; co-managed entries are never "
                         "touched")
        place = self.place(verb, req.get("topology"))
        if isinstance(place, tuple):
            return error(*place)
        if verb == "delete":
            state["entries"].pop(entry_id, None)
            result: dict[str, Any] = {"entry": None, "deleted": entry_id}
        elif verb == "update" and entry_id not in state["entries"]:
            return error("NOT_FOUND", f"{entry_id} does not exist")
        else:
            entry = {
                "id": entry_id, "kind": "note", "state": "available", "source": "provisioner",
                "provider": self.name, "amount": params["entry"].get("amount"),
                "owner": req.get("owner") or None,
            }
            if place is not None:
                entry["attributes"] = {"topology": place}
            state["entries"][entry_id] = entry
            result = {"entry": entry}
        state["ops"][op_id] = result
        self.save(state)
        return {"ok": True, "result": result}


    def place(self, verb: str, topology: Any) -> dict[str, str] | tuple[str, str] | None:
        """Where a create with a topology puts its note (None: no topology), or the error."""
        if topology is None:
            return None
        if verb != "create":
            return "INVALID_ARGUMENT", f"topology goes with create only, not with {verb}"
        from reconciler.protocol import ProviderError, TopologyRequirement

        try:
            chosen = TopologyRequirement.from_json(topology).choose(PLACES)
        except ProviderError as err:
            return err.code.value, err.message
        if chosen is None:
            return "RESOURCE_EXHAUSTED", f"none of the places {PLACES} is allowed"
        return dict(chosen)


def reply_text(notes: Notes, reply: dict[str, Any]) -> str:
    if notes.mode == "garbage":
        return "this is not json {"
    return json.dumps(reply)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--state", required=True)
    ap.add_argument("--mode", default="ok")
    ap.add_argument("--jsonl", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, args.root)
    notes = Notes(args.name, args.state, args.mode)
    if args.mode == "deaf":  # never reads its input: a big request fills the pipe
        time.sleep(30)
    if not args.jsonl:
        sys.stdout.write(reply_text(notes, notes.handle(json.loads(sys.stdin.read()))) + "\n")
        return
    for line in sys.stdin:
        req = json.loads(line)
        reply = notes.handle(req)
        reply["id"] = req["id"] + (1 if notes.mode == "wrong-id" else 0)
        sys.stdout.write(reply_text(notes, reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
