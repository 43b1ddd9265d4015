"""What every in-process provider shares: verb dispatch, op_id dedupe, epoch fencing,
owner fencing, and the declaration of the optional capabilities it offers.

``ProviderSkeleton`` answers the protocol once for every in-process provider: the epoch
check, then the op_id replay, then the owner fence (an entry another site-config owns is
never changed: ``fence_owner``), then the change and its record, all inside one
transaction of the provider's memory (its ``Book``). The built-ins (``BuiltinProvider``) keep that
memory in an ``OpLedger`` beside them and only say what they hold (``inventory``) and how to
change one entry (``create``/``update``/``delete``); the controller map keeps it in the
map file itself, so a change and its op_id commit together. A provider lists what it
offers in ``offers`` (``reconciler.protocol.Offer``); a request for anything else is
refused with ``UNIMPLEMENTED`` before it reaches the provider's code.
"""

from __future__ import annotations

import errno
import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from compiler.contract.supply_map import Entry, entries_json
from compiler.core.canonical import digest_of
from reconciler.protocol import (
    OPTIONAL,
    OPTIONAL_VERBS,
    VERBS,
    Capabilities,
    ErrorCode,
    Offer,
    ProviderError,
    Reply,
    Request,
)
from reconciler.providers.names import request_id
from reconciler.providers.opledger import OpLedger

if TYPE_CHECKING:
    from pydantic import BaseModel

MUTATING = ("create", "update", "delete", *OPTIONAL_VERBS)
TAGGING = ("create", "update", "expand")  # verbs that change what an entry is: its owner asked

# Why a built-in does not offer an optional capability, unless it says more itself.
NOT_OFFERED = {
    "publish": "it keeps no record of which hosts use what it holds; hosts reach it "
               "through site-config (the host groups that mount a volume or read a cache)",
    "expand": "what it holds has the size site-config gives it: a new amount is an update",
    "snapshot": "it holds no volume to copy at a point in time: records (the controller "
                "map) need none, and an immutable dataset copy has its next version instead",
    "topology": "it does not know where its supply sits in the site's topology; site-config "
                "says that (the hosts' racks and switches)",
}
assert set(NOT_OFFERED) == set(OPTIONAL)

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


def os_error(err: OSError) -> ProviderError:
    """A filesystem error as a protocol error: full disk, no permission, or other."""
    code = ErrorCode.INTERNAL
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        code = ErrorCode.RESOURCE_EXHAUSTED
    elif err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        code = ErrorCode.FAILED_PRECONDITION
    where = f" ({err.filename})" if err.filename else ""
    return ProviderError(code, f"{err.strerror or err}{where}")


def fence_owner(entry_id: str, holder: str | None, owner: str) -> None:
    """Refuse to touch an entry another site-config owns (co-managed entries stay theirs).

    The one rule for every provider: an entry tagged with an owner is changed only by a
    request of that owner; an untagged one (found, not created) by any.
    """
    if holder is not None and holder != owner:
        raise ProviderError(
            ErrorCode.FAILED_PRECONDITION,
            f"{entry_id} is owned by '{holder}', not '{owner or '(no owner)'}'; "
            "co-managed entries are never touched",
        )


def request_targets(params: Mapping[str, Any]) -> tuple[str, ...]:
    """The entries a change names: ``params.id`` and ``params.entry.id`` (either or both).

    What a request does not name well is left to the provider's own check of its params,
    which refuses it (INVALID_ARGUMENT) before anything is touched.
    """
    entry = params.get("entry")
    named = (params.get("id"), entry.get("id") if isinstance(entry, Mapping) else None)
    return tuple(dict.fromkeys(t for t in named if isinstance(t, str)))


def fingerprint(request: Request) -> str:
    """What makes a request the same request: its verb, owner and params.

    The owner counts: it is tagged on what the change makes, so replaying one owner's
    reply to another would name the wrong owner.
    """
    doc: dict[str, Any] = {"verb": request.verb, "owner": request.owner,
                           "params": dict(request.params)}
    if request.topology is not None:  # absent otherwise: older fingerprints stay the same
        doc["topology"] = request.topology.to_json()
    try:
        return digest_of(doc)
    except TypeError:
        raise ProviderError(ErrorCode.INVALID_ARGUMENT, "params must be plain JSON") from None


class Book(Protocol):
    """A provider's memory of changes, as one transaction sees it."""

    def check_epoch(self, epoch: int) -> None:
        """Refuse an epoch below the highest seen (ABORTED); remember a higher one."""

    def replay(self, op_id: str, fingerprint: str) -> Mapping[str, Any] | None:
        """The recorded result of ``op_id``, or None; an op_id reused for another request fails."""

    def record(self, op_id: str, fingerprint: str, result: Mapping[str, Any]) -> None: ...

    def savepoint(self) -> AbstractContextManager[None]:
        """Undo only the change on failure: the epoch just seen stays remembered."""


BookT = TypeVar("BookT", bound=Book)


class ProviderSkeleton(ABC, Generic[BookT]):
    """The protocol of an in-process provider; the built-in transport calls ``handle``."""

    kind: ClassVar[str]
    version: ClassVar[str] = "1"
    capabilities: ClassVar[tuple[str, ...]]  # the entry kinds it holds
    offers: ClassVar[Mapping[str, Offer]] = {}  # optional capabilities (protocol.OPTIONAL)
    unsupported: ClassVar[Mapping[str, str]] = {}  # why not, beyond NOT_OFFERED

    def __init__(self, name: str, params: BaseModel | None, workdir: Path) -> None:
        self.name = name
        self.params = params  # the kind's model (compiler.contract.provider_params); None: none
        self.workdir = workdir
        self._mutex = threading.Lock()  # one change at a time per provider

    # --- what a provider implements ----------------------------------------------------

    @abstractmethod
    def book(self) -> AbstractContextManager[BookT]:
        """One transaction of the provider's memory; it commits when the block ends."""

    @abstractmethod
    def change(self, book: BookT, request: Request) -> dict[str, Any]:
        """Make the change ``request`` asks for; its result is what a replay returns."""

    @abstractmethod
    def holder(self, book: BookT, entry_id: str) -> str | None:
        """The owner tag of an entry as the provider's memory has it (None: untagged/absent)."""

    @abstractmethod
    def inventory_result(self, params: Mapping[str, Any]) -> dict[str, Any]: ...

    @abstractmethod
    def capacity(self, params: Mapping[str, Any]) -> dict[str, int]: ...

    @abstractmethod
    def close(self) -> None: ...

    def probe(self) -> dict[str, Any]:
        return {"ready": True}

    def targets(self, request: Request) -> tuple[str, ...]:
        """The entries a change touches, each fenced by owner; a provider whose verb changes
        more than it names (expand of a user directory changes its quota) adds those."""
        return request_targets(request.params)

    def declared(self) -> Capabilities:
        reasons = {cap: self.unsupported.get(cap, NOT_OFFERED[cap])
                   for cap in OPTIONAL if cap not in self.offers}
        return Capabilities(self.name, self.offers, reasons)

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
        if not isinstance(request.params, Mapping):
            raise ProviderError(ErrorCode.INVALID_ARGUMENT, "params must be an object")
        declared = self.declared()
        if verb == "info":
            return {"name": self.name, "kind": self.kind, "version": self.version,
                    "capabilities": list(self.capabilities), **declared.info_json()}
        declared.check(request)  # an optional capability not offered: UNIMPLEMENTED
        if verb == "probe":
            return self.probe()
        if verb == "inventory":
            return self.inventory_result(request.params)
        if verb == "capacity":
            return self.capacity(request.params)
        if verb in MUTATING:
            return self._mutate(request)
        raise ProviderError(
            ErrorCode.INVALID_ARGUMENT, f"unknown verb {verb!r}; known: {', '.join(VERBS)}"
        )

    def _mutate(self, request: Request) -> Mapping[str, Any]:
        """Fence, replay, fence by owner, change, record: one transaction; a failed change
        keeps the epoch.

        The epoch comes first: a superseded applier is refused even an op it had sent
        before, so it learns at once that it must stop. A replay needs no owner fence: the
        owner is part of the request's fingerprint.
        """
        if not request.op_id:
            raise ProviderError(
                ErrorCode.INVALID_ARGUMENT, f"{request.verb} needs an op_id (the idempotency key)"
            )
        digest = fingerprint(request)
        with self._mutex, self.book() as book:
            book.check_epoch(request.epoch)
            prior = book.replay(request.op_id, digest)
            if prior is not None:
                return prior
            try:
                with book.savepoint():
                    for target in self.targets(request):
                        fence_owner(target, self.holder(book, target), request.owner)
                    result = self.change(book, request)
            except ProviderError as err:
                failure = err  # raised once the transaction has kept the new epoch
            else:
                book.record(request.op_id, digest, result)
                return result
        raise failure


class BuiltinProvider(ProviderSkeleton[OpLedger]):
    """A built-in that keeps its memory in ``<workdir>/providers/<name>/opledger.sqlite``."""

    def __init__(self, name: str, params: BaseModel, workdir: Path) -> None:
        super().__init__(name, params, workdir)
        self.state_dir = state_dir(workdir, name)
        self.ledger = OpLedger(self.state_dir / "opledger.sqlite")

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

    def close(self) -> None:
        self.ledger.close()

    # --- the skeleton's hooks ----------------------------------------------------------

    def book(self) -> AbstractContextManager[OpLedger]:
        """The ledger commits each step itself; a filesystem change cannot be rolled back."""
        return nullcontext(self.ledger)

    def holder(self, book: OpLedger, entry_id: str) -> str | None:
        return book.tag_of(entry_id)

    def inventory_result(self, params: Mapping[str, Any]) -> dict[str, Any]:
        tags = self.ledger.tags()
        entries = [
            e if e.owner is not None or e.id not in tags else replace(e, owner=tags[e.id])
            for e in self.inventory(params)
        ]
        docs = entries_json(entries)
        generation = self.ledger.observe(digest_of(docs))
        return {"generation": generation, "complete": True, "entries": docs}

    def change(self, book: OpLedger, request: Request) -> dict[str, Any]:
        """Make the change and keep owner tags: a publish leaves its entry's owner as it is."""
        made: ChangeMade = getattr(self, request.verb)(request.params)
        entry = made.entry
        if request.verb == "delete":
            book.untag(request_id(request.params))
        elif entry is not None and request.verb in TAGGING and request.owner:
            book.tag(entry.id, request.owner)
            entry = replace(entry, owner=request.owner)
        elif entry is not None and request.verb not in TAGGING:
            entry = replace(entry, owner=book.tags().get(entry.id))
        return {"entry": entry.to_json() if entry is not None else None, **made.details}
