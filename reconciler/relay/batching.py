"""The calls queued for one proxied provider: written in batches, their replies polled together.

The applier's worker threads call a provider concurrently; queued one by one, each call
would cost a store transaction to enqueue and one per poll. Here the calls group-commit:
the first caller to find the store free writes every call waiting to be queued in one
``enqueue_calls``; those arriving meanwhile wait for it and go in the next one. Likewise
one caller at a time polls, with one ``call_replies`` for every call still waiting, and
hands each waiting thread its reply. The poll interval starts at ``POLL_FIRST`` after
calls are queued and after each reply, and doubles while nothing comes, up to
``POLL_MAX``: a proxy answers within milliseconds when it is busy, and an idle wait
costs the store five reads a second.

A store failure is a failed reply, never an exception: a transport never raises.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reconciler.protocol import ErrorCode, ProviderError, Reply
from reconciler.state import StateError, StateStore
from reconciler.transports.base import decode_reply, named_error

POLL_FIRST = 0.002  # seconds between two polls after calls are queued or a reply came
POLL_MAX = 0.05  # the longest pause between two polls while nothing comes


@dataclass(slots=True)
class _Slot:
    """One queued op_id and the threads waiting for its reply (the same op may be waited
    for twice: a retry of a call whose first wait ran out)."""

    doc: dict[str, Any]
    waiters: int = 1
    written: bool = False  # in the queue (or refused before it: ``reply`` says why)
    reply: Reply | None = None


class CallBatcher:
    """The call queue of one provider of one site, shared by the threads that call it."""

    def __init__(self, store: StateStore, site: str, provider: str) -> None:
        self._store = store
        self._site = site
        self._provider = provider
        self._cond = threading.Condition(threading.Lock())
        self._slots: dict[str, _Slot] = {}
        self._unwritten: list[tuple[str, _Slot]] = []
        self._flushing = False
        self._polling = False
        self._pause = POLL_FIRST
        self._next_poll = 0.0

    def call(self, op_id: str, doc: dict[str, Any], timeout: float) -> Reply | None:
        """Queue request ``doc`` as ``op_id`` and wait for its reply; None when none came
        within ``timeout`` seconds (the call stays queued: a proxy may still make it)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            slot = self._join(op_id, doc)
            try:
                while not slot.written:
                    if self._flushing:
                        self._cond.wait()
                    else:
                        self._flush()
                return self._answer(slot, deadline)
            finally:
                self._leave(op_id, slot)

    def _join(self, op_id: str, doc: dict[str, Any]) -> _Slot:
        slot = self._slots.get(op_id)
        if slot is not None:
            slot.waiters += 1
            return slot
        slot = self._slots[op_id] = _Slot(doc)
        self._unwritten.append((op_id, slot))
        return slot

    def _leave(self, op_id: str, slot: _Slot) -> None:
        slot.waiters -= 1
        if slot.waiters == 0 and self._slots.get(op_id) is slot:
            del self._slots[op_id]

    def _flush(self) -> None:
        """Write every call waiting to be queued in one transaction (the lock is released
        meanwhile, so the next callers gather for the next one)."""
        batch, self._unwritten = self._unwritten, []
        self._flushing = True
        done: Mapping[str, Any] = {}
        failed: Reply | None = None
        self._cond.release()
        try:
            done = self._store.enqueue_calls(self._site, self._provider,
                                             [(op_id, slot.doc) for op_id, slot in batch])
        except StateError as err:
            failed = Reply.failure(named_error(self._provider, ErrorCode.UNAVAILABLE, (
                f"could not queue its calls in the state store ({err.problems[0].message}); "
                "they were not sent")))
        finally:
            self._cond.acquire()
            self._flushing = False
            for op_id, slot in batch:
                slot.written = True
                if failed is not None or op_id in done:
                    slot.reply = failed or self._decoded(done[op_id])
            self._pause, self._next_poll = POLL_FIRST, time.monotonic() + POLL_FIRST
            self._cond.notify_all()

    def _answer(self, slot: _Slot, deadline: float) -> Reply | None:
        """The slot's reply, polled for by whichever waiting thread finds no poll running."""
        while slot.reply is None:
            now = time.monotonic()
            if now >= deadline:
                return None
            if self._polling or now < self._next_poll:
                until = deadline if self._polling else min(deadline, self._next_poll)
                self._cond.wait(until - now)
                continue
            self._poll()
        return slot.reply

    def _poll(self) -> None:
        """One ``call_replies`` for every call still waiting; each found reply handed over."""
        waiting = {op_id: slot for op_id, slot in self._slots.items()
                   if slot.written and slot.reply is None}
        self._polling = True
        replies: Mapping[str, Any] = {}
        failed: Reply | None = None
        self._cond.release()
        try:
            replies = self._store.call_replies(self._site, self._provider, list(waiting))
        except StateError as err:
            failed = Reply.failure(named_error(self._provider, ErrorCode.INTERNAL, (
                f"lost track of its queued calls: the state store failed while waiting for "
                f"their replies ({err.problems[0].message}); they may have been made, so "
                "they stay in doubt")))
        finally:
            self._cond.acquire()
            self._polling = False
            for op_id, slot in waiting.items():
                if failed is not None or op_id in replies:
                    slot.reply = failed or self._decoded(replies[op_id])
            self._pause = POLL_FIRST if replies else min(self._pause * 2, POLL_MAX)
            self._next_poll = time.monotonic() + self._pause
            self._cond.notify_all()

    def _decoded(self, doc: Any) -> Reply:
        """A reply document as the proxy wrote it; a malformed one is INTERNAL (in doubt)."""
        try:
            return decode_reply(self._provider, doc)
        except ProviderError as err:
            return Reply.failure(err)
