"""The site's apply lock: fail fast or wait, and take over from a runner that died here.

Locks are TTL leases (the state store), so a runner that died anywhere frees its lock once
the lease runs out. A holder on this very host whose process is gone (killed, crashed)
is known dead right away: its lease is released (only if it still holds it) so that a
re-run after ``kill -9`` can finish the apply without waiting for the TTL.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from reconciler.state import Holder, Lock, LockHeld, LockLost, StateStore
from reconciler.state.holder import pid_in_this_scope

POLL_S = 0.2


@dataclass(frozen=True, slots=True)
class Taken:
    lock: Lock
    took_over: Lock | None  # the dead runner's lock that was released, if any


def dead_here(lock: Lock) -> bool:
    """True when the holder ran on this host, among our pids, and its process is gone."""
    pid = pid_in_this_scope(lock.holder)
    if pid is None or lock.host != socket.gethostname():
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return _zombie(pid)


def _zombie(pid: int) -> bool:
    """A killed process that its parent has not reaped yet is dead too."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def take_lock(store: StateStore, name: str, holder: Holder, ttl: float, wait: float) -> Taken:
    """Acquire ``name``, waiting up to ``wait`` s; raise ``LockHeld`` naming the holder."""
    started = time.monotonic()
    took_over: Lock | None = None
    while True:
        try:
            return Taken(store.acquire(name, holder, ttl), took_over)
        except LockHeld as held:
            if dead_here(held.lock):
                try:
                    store.release(name, held.lock.holder)  # only if the dead one still holds it
                    took_over = held.lock
                except LockLost:
                    pass
                continue
            waited = time.monotonic() - started
            if waited >= wait:
                raise LockHeld(held.lock, store.label, wait) from None
            time.sleep(min(POLL_S, wait - waited))
