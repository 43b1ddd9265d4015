"""The in-process transport: a Python provider object called directly.

Built-in providers speak the same Request/Reply objects as the wire, so conformance
tests and the applier treat them exactly like external ones. A crash inside a provider
is a bug there, reported as INTERNAL naming the provider instead of unwinding the caller.

Each call runs in a worker thread and the caller waits at most the binding's ``timeout``,
as for an external provider: a call stuck in the kernel (a hung network filesystem, a
FIFO that blocks ``open``) cannot stall the caller, which holds the site's lock. A thread
cannot be killed, so such a call is *abandoned*: it goes on in the background and the
caller gets ``DEADLINE_EXCEEDED`` — for a change, an outcome that is not known, which the
applier handles as for an external provider that timed out. A retry of that op (same
op_id and request) waits for the call still running instead of starting it again. At
most ``MAX_ABANDONED`` calls of one provider may hang at a time; past that, other calls
fail at once (UNAVAILABLE: not started) rather than piling up threads. A reply is held to
``max_reply_bytes`` of JSON, like a reply read from a provider process.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import orjson

from reconciler.protocol import ErrorCode, ProviderError, Reply, Request
from reconciler.transports.base import (
    DEFAULT_MAX_REPLY_BYTES,
    DEFAULT_TIMEOUT,
    channel_error,
    reply_too_large,
)

MAX_ABANDONED = 4
IDLE_SECONDS = 5.0  # a worker thread with nothing to do for this long ends


class Handler(Protocol):
    def handle(self, request: Request) -> Reply: ...

    def close(self) -> None: ...


@dataclass(slots=True)
class _Call:
    request: Request
    done: threading.Event = field(default_factory=threading.Event)
    reply: Reply | None = None
    abandoned: bool = False


class _Workers:
    """Daemon threads that run calls, reused while calls keep coming. Not a
    ThreadPoolExecutor: its threads are joined when Python exits, so one abandoned call
    would block the exit. ``_idle`` counts the threads waiting for a job minus the jobs
    queued, so each job has a thread and a thread leaves only when none is needed."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1
        if start:
            threading.Thread(target=self._work, name=f"provider {self._name}",
                             daemon=True).start()
        self._jobs.put(job)

    def _work(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:  # more threads wait than jobs are queued: leave
                        self._idle -= 1
                        return
                continue  # a job was just queued for this thread
            job()
            with self._lock:
                self._idle += 1


class BuiltinTransport:
    def __init__(self, name: str, provider: Handler, timeout: float = DEFAULT_TIMEOUT,
                 max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES) -> None:
        self.name = name
        self.provider = provider
        self.timeout = timeout
        self.max_reply_bytes = max_reply_bytes
        self._workers = _Workers(name)
        self._lock = threading.Lock()
        self._abandoned = 0  # calls past their timeout that have not returned yet
        self._in_doubt: dict[str, _Call] = {}  # op_id -> its abandoned call, still running
        self._closing = False

    def call(self, request: Request) -> Reply:
        with self._lock:
            call = self._in_doubt.get(request.op_id) if request.op_id else None
            fresh = call is None or call.request != request
            if fresh and self._abandoned >= MAX_ABANDONED:
                return channel_error(
                    self.name, ErrorCode.UNAVAILABLE,
                    f"has {self._abandoned} calls still running past its {self.timeout:g}s "
                    "timeout; not starting another until they return",
                )
        if call is None or fresh:
            # A retry of an op whose call still runs waits for that call instead: the op
            # never runs twice at once, and its outcome stays unknown until that call ends.
            call = _Call(request)
            self._workers.submit(lambda: self._run(call))
        call.done.wait(self.timeout)
        with self._lock:
            if call.reply is not None:
                return call.reply
            if not call.abandoned:
                call.abandoned = True
                self._abandoned += 1
                if request.op_id:
                    self._in_doubt[request.op_id] = call
        return channel_error(
            self.name, ErrorCode.DEADLINE_EXCEEDED,
            f"did not answer within {self.timeout:g}s (abandoned: it may still finish in "
            "the background)",
        )

    def close(self) -> None:
        """Close the provider, or leave that to the last abandoned call when it returns:
        its state must not be closed under a call that still uses it."""
        with self._lock:
            self._closing = True
            busy = self._abandoned > 0
        if not busy:
            self.provider.close()

    def _run(self, call: _Call) -> None:
        reply = self._checked(self._handle(call.request))
        with self._lock:
            call.reply = reply
            call.done.set()
            if call.abandoned:
                self._abandoned -= 1
                if self._in_doubt.get(call.request.op_id) is call:
                    del self._in_doubt[call.request.op_id]
            last = call.abandoned and self._abandoned == 0 and self._closing
        if last:
            self.provider.close()

    def _handle(self, request: Request) -> Reply:
        try:
            return self.provider.handle(request)
        except ProviderError as err:
            return Reply.failure(err)
        except Exception as exc:  # a provider bug must not crash the caller
            detail = f"failed: {type(exc).__name__}: {exc}"
            return channel_error(self.name, ErrorCode.INTERNAL, detail)

    def _checked(self, reply: Reply) -> Reply:
        """The reply, or RESOURCE_EXHAUSTED when its JSON is larger than the binding allows."""
        try:
            size = len(orjson.dumps(reply.to_json()))
        except TypeError as exc:
            detail = f"failed: its reply is not JSON: {exc}"
            return channel_error(self.name, ErrorCode.INTERNAL, detail)
        if size > self.max_reply_bytes:
            return Reply.failure(reply_too_large(self.name, self.max_reply_bytes, "refused"))
        return reply
