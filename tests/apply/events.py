"""What crash tests wait on instead of sleeping or polling the journal every few milliseconds.

A crash test acts at a precise point of another process's work: it kills an apply once the
provider has received a call, lets a held call finish, reads the ledger once every call has
ended. Polling the store or a log for that point cost hundreds of queries a second on the two
cores the apply itself needs, and tied each test to the clock. Here each point is an event:

- ``Doorbell``: a FIFO the test reads. The slow provider (tests/apply/slow_provider.py) writes a
  line to ``<home>/events`` when it receives a call and when it makes a change; ``popen`` copies an
  ``xce-apply``'s stderr to its log and rings once per progress line. ``wait`` checks its
  condition (on the store or the logs: the events only wake it) at each ring, and stops when
  it holds or when the watched process ends (its pidfd).
- ``Gate``: calls for held entries take a shared lock on ``<home>/gate``, which the test holds
  exclusively until it lets go; ``all_calls_ended`` takes ``<home>/busy``, which each provider
  process holds shared while it works.
- ``poll``: for a point no event marks (a row appearing in the store, a server backend
  appearing), a bounded number of checks.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

QUIET_S = 60.0  # a wait fails when nothing at all happened for this long (a hung process)


class Doorbell:
    """A FIFO at ``path`` that other processes (and ``popen``'s threads) ring by writing a line."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(path)
        self.path = path
        # read and write: the open does not wait for a writer, and reads never see an end
        self._fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)

    def __enter__(self) -> Doorbell:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None,
                 trace: TracebackType | None) -> None:
        fd, self._fd = self._fd, -1
        os.close(fd)
        self.path.unlink(missing_ok=True)

    def ring(self) -> None:
        if self._fd < 0:  # closed: nobody waits any more
            return
        with contextlib.suppress(BlockingIOError):  # full: it holds rings enough to wake one
            os.write(self._fd, b"\n")

    def popen(self, args: list[str], log: Path, **options: Any) -> subprocess.Popen[str]:
        """Start ``args`` with its stderr copied to ``log`` (as a file would have it) by a
        thread that rings the bell at each line; waiting for the child waits for the copy."""
        read, write = os.pipe()
        out = log.open("ab")  # appending: a killed child's last lines cannot leave a hole
        out.truncate(0)
        try:
            proc = _Teed(args, stderr=write, text=True, **options)
        finally:
            os.close(write)
        proc.copying = threading.Thread(target=self._copy, args=(read, out), daemon=True)
        proc.copying.start()
        return proc

    def _copy(self, read: int, out: BinaryIO) -> None:
        with open(read, "rb") as source, out:
            for line in source:
                out.write(line)
                out.flush()
                self.ring()

    def wait(self, until: Callable[[], bool], proc: subprocess.Popen[str] | None = None,
             what: str = "the condition") -> bool:
        """Check ``until`` at each ring until it holds (True) or ``proc`` has ended (False:
        whatever ``until`` says then). Fails when nothing rings for ``QUIET_S``."""
        pidfd = [os.pidfd_open(proc.pid)] if proc is not None else []
        try:
            while not until():
                ready, _, _ = select.select([self._fd, *pidfd], [], [], QUIET_S)
                assert ready, f"nothing happened for {QUIET_S:.0f} s while waiting for {what}"
                self._drain()
                if pidfd and pidfd[0] in ready:
                    return until()
            return True
        finally:
            for fd in pidfd:
                os.close(fd)

    def _drain(self) -> None:
        with contextlib.suppress(BlockingIOError):  # empty
            while os.read(self._fd, 1 << 16):
                pass


class _Teed(subprocess.Popen[str]):
    """A child whose stderr a thread copies (``Doorbell.popen``): its end is the copy's too."""

    copying: threading.Thread | None = None

    def wait(self, timeout: float | None = None) -> int:
        code = super().wait(timeout)
        if self.copying is not None:
            self.copying.join()
        return code


def poll(until: Callable[[], bool], proc: subprocess.Popen[str] | None = None, *,
         what: str = "the condition", every: float = 0.005, tries: int = 12_000) -> bool:
    """For a point no event marks: check ``until`` every ``every`` s, at most ``tries``
    times (a failure past that); False when ``proc`` ended first."""
    for _ in range(tries):
        if until():
            return True
        if proc is not None and proc.poll() is not None:
            return until()
        time.sleep(every)
    raise AssertionError(f"still waiting for {what} after {tries} checks")


class Gate:
    """Held provider calls wait (a shared lock on ``path``) until the test lets go of the
    exclusive lock it takes here."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("a")
        fcntl.flock(self._file, fcntl.LOCK_EX)

    def open(self) -> None:
        self._file.close()  # closing the file releases its lock


def all_calls_ended(home: Path) -> None:
    """Return once no provider process of ``home`` is at work (each holds ``busy`` shared)."""
    with (home / "busy").open("a") as busy:
        fcntl.flock(busy, fcntl.LOCK_EX)
