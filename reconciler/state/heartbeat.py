"""Keeps a lease alive while a long apply runs, and tells the apply when it was lost.

The lease TTL stays short (a crashed runner frees the lock soon), while a background
thread renews it every third of the TTL, through the apply's own store (its connection,
reopened by the store when lost, as for any call). A store that cannot be reached is
retried until the lease would have run out; any other failure ends the heartbeat at once.
The apply calls ``check()`` between provider calls and stops once the lock is lost: a
heartbeat that stopped for any reason never lets a run go on without its lease.
"""

from __future__ import annotations

import threading
import time

from reconciler.state.errors import LockLost, StateError, store_failed
from reconciler.state.locks import Locks
from reconciler.state.store import Lock


class Heartbeat:
    """``with Heartbeat(store, lock, ttl) as beat:`` … ``beat.check()`` between calls."""

    def __init__(
        self, store: Locks, lock: Lock, ttl: float, interval: float | None = None
    ) -> None:
        self._store = store
        self._name = lock.name
        self._holder = lock.holder
        self._ttl = ttl
        self._interval = ttl / 3 if interval is None else interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat {lock.name}")
        self._thread.daemon = True
        self.lock = lock
        self.failure: StateError | None = None

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def check(self) -> None:
        """Raise why the lease was lost (``LockLost`` or an unreachable store), if it was."""
        if self.failure is not None:
            raise self.failure

    def _beat(self) -> None:
        renewed = time.monotonic()
        while not self._stop.wait(self._interval):
            try:
                self.lock = self._store.renew(self._name, self._holder, self._ttl)
                renewed = time.monotonic()
            except LockLost as err:
                self.failure = err
                return
            except StateError as err:
                if time.monotonic() - renewed >= self._ttl:
                    self.failure = err
                    return
            except Exception as err:  # not the store's known failures: never beat on blind
                self.failure = store_failed(self._store.label, "the lock's heartbeat "
                                            f"failed: {type(err).__name__}: {err}")
                return
