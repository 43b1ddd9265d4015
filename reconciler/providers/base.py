"""What all built-in providers share: verb dispatch, op_id dedupe, epoch fencing, generations.

A concrete provider only says what it holds (``inventory``) and how to change one entry
(``create``/``update``/``delete``); this base makes every change idempotent by op_id,
fenced by epoch, and tagged with its owner, the same way for every built-in.
"""

from __future__ import annotations

import errno
import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from compiler.canonical import digest_of
from compiler.supply_map import Entry, entries_json
from reconciler.protocol import VERBS, ErrorCode, ProviderError, Reply, Request
from reconciler.providers.names import request_id
from reconciler.providers.opledger import OpLedger

MUTATING = ("create", "update", "delete")

# Live entries a provider reports were made (or found) by a provider, not written in config.
LIVE_SOURCE = "provisioner"


@dataclass(frozen=True, slots=True)
class ChangeMade:
    """The outcome of one create/update/delete: the entry as it now is, plus details."""

    entry: Entry | None
    details: Mapping[str, Any] = field(default_factory=dict)


def state_dir(workdir: Path, name: str) -> Path:
    """Where a built-in provider keeps its state: ``<workdir>/providers/<name>/``."""
    return workdir / "providers" / name


def resolve_under(workdir: Path, value: object, default: str, what: str) -> Path:
    """A path param: relative paths resolve under the workdir."""
    if value is None:
        value = default
    if not isinstance(value, str) or not value:
        raise ProviderError(ErrorCode.INVALID_ARGUMENT, f"param {what} must be a path string")
    path = Path(value)
    return path if path.is_absolute() else workdir / path


def os_error(err: OSError) -> ProviderError:
    """A filesystem error as a protocol error: full disk, no permission, or other."""
    code = ErrorCode.INTERNAL
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        code = ErrorCode.RESOURCE_EXHAUSTED
    elif err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        code = ErrorCode.FAILED_PRECONDITION
    where = f" ({err.filename})" if err.filename else ""
    return ProviderError(code, f"{err.strerror or err}{where}")


class BuiltinProvider(ABC):
    kind: ClassVar[str]
    version: ClassVar[str] = "1"
    capabilities: ClassVar[tuple[str, ...]]

    def __init__(self, name: str, params: Mapping[str, Any], workdir: Path) -> None:
        self.name = name
        self.params = params
        self.workdir = workdir
        self.state_dir = state_dir(workdir, name)
        self.ledger = OpLedger(self.state_dir / "opledger.sqlite")
        self._mutex = threading.Lock()  # one change at a time per provider

    # --- what a concrete provider implements -------------------------------------------

    @abstractmethod
    def inventory(self, params: Mapping[str, Any]) -> list[Entry]:
        """Everything this provider holds right now (owner tags are filled in by the base)."""

    @abstractmethod
    def create(self, params: Mapping[str, Any]) -> ChangeMade: ...

    @abstractmethod
    def update(self, params: Mapping[str, Any]) -> ChangeMade: ...

    @abstractmethod
    def delete(self, params: Mapping[str, Any]) -> ChangeMade: ...

    @abstractmethod
    def capacity(self, params: Mapping[str, Any]) -> dict[str, int]: ...

    def probe(self) -> dict[str, Any]:
        return {"ready": True}

    def close(self) -> None:
        self.ledger.close()

    # --- the protocol ------------------------------------------------------------------

    def handle(self, request: Request) -> Reply:
        try:
            return Reply.success(self._dispatch(request))
        except ProviderError as err:
            return Reply.failure(err)
        except OSError as err:
            return Reply.failure(os_error(err))

    def _dispatch(self, request: Request) -> Mapping[str, Any]:
        verb = request.verb
        if verb == "info":
            return {
                "name": self.name,
                "kind": self.kind,
                "version": self.version,
                "capabilities": list(self.capabilities),
                "verbs": list(VERBS),
            }
        if verb == "probe":
            return self.probe()
        if verb == "inventory":
            return self._inventory(request.params)
        if verb == "capacity":
            return self.capacity(request.params)
        if verb in MUTATING:
            return self._mutate(request)
        raise ProviderError(
            ErrorCode.INVALID_ARGUMENT, f"unknown verb {verb!r}; known: {', '.join(VERBS)}"
        )

    def _inventory(self, params: Mapping[str, Any]) -> dict[str, Any]:
        tags = self.ledger.tags()
        entries = [
            e if e.owner is not None or e.id not in tags else replace(e, owner=tags[e.id])
            for e in self.inventory(params)
        ]
        docs = entries_json(entries)
        generation = self.ledger.observe(digest_of(docs))
        return {"generation": generation, "complete": True, "entries": docs}

    def _mutate(self, request: Request) -> Mapping[str, Any]:
        if not request.op_id:
            raise ProviderError(ErrorCode.INVALID_ARGUMENT, f"{request.verb} needs an op_id")
        fingerprint = digest_of({"verb": request.verb, "params": dict(request.params)})
        with self._mutex:
            self.ledger.check_epoch(request.epoch)
            prior = self.ledger.replay(request.op_id, fingerprint)
            if prior is not None:
                return Reply.from_json(prior).result
            change = getattr(self, request.verb)(request.params)
            result = self._result(request, change)
            self.ledger.record(request.op_id, Reply.success(result).to_json(), fingerprint)
            return result

    def _result(self, request: Request, change: ChangeMade) -> dict[str, Any]:
        entry = change.entry
        if request.verb == "delete":
            self.ledger.untag(request_id(request.params))
        elif entry is not None and request.owner:
            self.ledger.tag(entry.id, request.owner)
            entry = replace(entry, owner=request.owner)
        return {"entry": entry.to_json() if entry is not None else None, **change.details}
