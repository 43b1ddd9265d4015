"""Built-in providers for the tests that hang the way a stuck filesystem makes them hang:
in the kernel, in the ``open()`` of a FIFO that no one writes to, until the test lets go.

A ``Gate`` is such a FIFO. ``HangingDirectory`` is the real ``directory`` provider, except
that its inventory, or the create of an entry, first passes the gate named after it in
``<workdir>/gates/`` when there is one (``gate_for``).
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from compiler.contract.supply_map import Entry
from reconciler.protocol import Reply, Request
from reconciler.providers.base import ChangeMade
from reconciler.providers.directory import DirectoryProvider
from reconciler.providers.names import request_id


def pass_through(path: Path) -> None:
    """Open ``path`` for reading: on a FIFO without a writer, this blocks."""
    with open(path, "rb"):
        pass


class Gate:
    """A FIFO: opening it blocks until ``release``, which lets every waiter through and
    leaves a plain file in its place, so that later passes do not block."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(path)

    def wait(self) -> None:
        pass_through(self.path)

    def release(self) -> None:
        """Let waiters through; a no-op once the test's folder is gone (a timer that fires
        after its test ended has nobody left to release)."""
        try:
            writer: int | None = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            return
        except OSError as err:  # ENXIO: no one waits at the moment
            assert err.errno == errno.ENXIO, err
            writer = None
        plain = self.path.with_name(self.path.name + ".open")
        try:
            plain.touch()
            os.replace(plain, self.path)
        except FileNotFoundError:
            return
        finally:
            if writer is not None:
                os.close(writer)


def gate_path(workdir: Path, what: str) -> Path:
    return workdir / "gates" / what.replace("/", "_")


def gate_for(workdir: Path, what: str) -> Gate:
    return Gate(gate_path(workdir, what))


class HangingDirectory(DirectoryProvider):
    def _pass(self, what: str) -> None:
        path = gate_path(self.workdir, what)
        if path.exists():
            pass_through(path)

    def inventory(self, params: Mapping[str, Any]) -> list[Entry]:
        self._pass("inventory")
        return super().inventory(params)

    def create(self, params: Mapping[str, Any]) -> ChangeMade:
        self._pass(request_id(params))
        return super().create(params)


class Hanging:
    """A minimal handler: each call passes ``gate`` (when set), and is counted."""

    def __init__(self, gate: Gate | None = None) -> None:
        self.gate = gate
        self.calls: list[str] = []
        self.closed = threading.Event()
        self._lock = threading.Lock()

    def handle(self, request: Request) -> Reply:
        if self.gate is not None:
            self.gate.wait()
        with self._lock:
            self.calls.append(request.op_id or request.verb)
        return Reply.success({"done": request.op_id or request.verb})

    def close(self) -> None:
        self.closed.set()
