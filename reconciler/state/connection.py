"""What every concern of the state store shares: one backend, its transactions and its clock.

Each public method of the store is one transaction; writes first read the store's clock (the
server's, for PostgreSQL), so lease times come from one clock however many runners share the
store. A mutex makes one store safe to share between threads (the apply and its lock
heartbeat).

A lost connection (a server restart, a pooler, a failover) is opened again and the method's
transaction run once more, but only while every lease this store took is still its own and
no newer epoch was taken under its name: otherwise the runner may have been superseded, and
the store raises ``LockLost`` (XCE807) or XCE808 instead, so the apply stops. The connection
remembers those leases and epochs; the locks concern (``locks.py``) verifies them.
"""

from __future__ import annotations

import functools
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, Self, TypeVar

from reconciler.state.dialect import Backend, Row
from reconciler.state.errors import StateError, store_failed
from reconciler.state.store import Lock

_PAUSE_S = (0.05, 1.0)  # first and longest pause between two attempts to reconnect

P = ParamSpec("P")
T = TypeVar("T")
C = TypeVar("C", bound="Connection")


@dataclass(frozen=True, slots=True)
class _Lease:
    holder: str
    until: float  # time.monotonic() when the lease runs out unless renewed


def reconnecting(
    method: Callable[Concatenate[C, P], T],
) -> Callable[Concatenate[C, P], T]:
    """Run the method (one transaction) again on a new connection when the old one was lost.

    A transaction cut off before its COMMIT was rolled back by the server; one cut off
    during its COMMIT may have been committed, so every method is safe to run twice: at
    worst an op's attempts count one more, a drift record is kept twice, or a release that
    went through reports the lock lost.
    """

    def run(self: C, /, *args: P.args, **kwargs: P.kwargs) -> T:
        with self._mutex:
            deadline: float | None = None
            while True:
                try:
                    return method(self, *args, **kwargs)
                except StateError:
                    if not self._db.lost():
                        raise
                    deadline = deadline or self._reconnect_deadline()
                    self._reconnect(deadline)

    functools.update_wrapper(run, method)
    return run


class Connection(ABC):
    """One backend behind a mutex: transactions, the store's clock, statements, reconnecting."""

    def __init__(self, backend: Backend, reconnect_s: float) -> None:
        """``reconnect_s``: how long to try to reopen a lost connection when no lease bounds it."""
        self._db = backend
        self._sql = backend.dialect.sql
        self._mutex = threading.RLock()
        self._reconnect_s = reconnect_s
        self._leases: dict[str, _Lease] = {}  # the locks this store holds, by name
        self._epochs: dict[str, int] = {}  # the epoch taken under each of those names
        # how often a lost connection was opened again (each time with the leases and
        # epochs this store holds found still its own): for the apply's notices
        self.reconnects = 0

    @property
    def label(self) -> str:
        """The store's location for messages: a path or a password-free URL."""
        return self._db.label

    def close(self) -> None:
        with self._mutex:
            self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _guarded(self) -> Iterator[None]:
        """One thread at a time; driver failures the user must fix become StateErrors."""
        with self._mutex:
            try:
                yield
            except StateError:
                raise
            except Exception as err:
                user_error = self._db.translate(err)
                if user_error is None:
                    raise
                raise user_error from None

    @contextmanager
    def _transaction(self, write: bool) -> Iterator[None]:
        with self._guarded(), self._db.transaction(write):
            yield

    @contextmanager
    def _write(self) -> Iterator[float]:
        """A write transaction; yields the store's clock (epoch seconds)."""
        with self._transaction(write=True):
            yield self._clock()

    def _clock(self) -> float:
        now_sql = self._db.dialect.now_sql
        return float(self._db.query(now_sql)[0][0]) if now_sql else time.time()

    def _query(self, sql: str, *params: Any) -> list[Row]:
        return self._db.query(self._sql(sql), params)

    def _execute(self, sql: str, *params: Any) -> int:
        return self._db.execute(self._sql(sql), params)

    def _execute_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self._db.execute_many(self._sql(sql), rows)

    # -- the leases held, which bound and guard reconnecting ----------------------------

    def _hold(self, lock: Lock, ttl: float) -> None:
        self._leases[lock.name] = _Lease(lock.holder, time.monotonic() + ttl)

    def _forget(self, name: str) -> None:
        self._leases.pop(name, None)
        self._epochs.pop(name, None)

    @abstractmethod
    def _verify_held(self) -> None:
        """Go on only while each lease is still ours and unexpired and no newer epoch was
        taken under its name: else another runner may have taken over meanwhile."""

    def _reconnect_deadline(self) -> float:
        """Until the first lease held would run out: past it, the runner must stop anyway."""
        leases = [lease.until for lease in self._leases.values()]
        return min(leases) if leases else time.monotonic() + self._reconnect_s

    def _reconnect(self, deadline: float) -> None:
        """Open a new connection, then check the leases and epochs; try until ``deadline``."""
        pause, started = _PAUSE_S[0], time.monotonic()
        while True:
            try:
                self._db.reconnect()
                self._verify_held()
                self.reconnects += 1
                return
            except StateError as err:
                if not self._db.lost():  # reconnected, but the lease or epoch is gone
                    raise
                left = deadline - time.monotonic()
                if left <= 0:
                    why = err.problems[0].message
                    raise store_failed(self.label, f"the connection was lost and could not "
                                       f"be opened again within {time.monotonic() - started:.1f}"
                                       f" s ({why})") from None
                time.sleep(min(pause, left))
                pause = min(pause * 2, _PAUSE_S[1])
