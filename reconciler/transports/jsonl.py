"""The persistent JSON-lines transport: one long-lived provider process, a line per message.

For providers that are expensive to start (a cloud SDK, a license-server session).
Each request line carries an ``id`` that its reply line must echo; a reply that is not
JSON or has the wrong id means the stream is out of step, so the process is killed and
the next call starts a fresh one (restart on crash). Calls are serialized per transport.
The timeout covers writing the request too: a provider that stops reading its input
cannot block the caller on a full pipe.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from reconciler.protocol import ErrorCode, ProviderError, Reply, Request
from reconciler.transports.base import decode_document, decode_reply, encode_request, named_error
from reconciler.transports.process import exit_detail, kill_tree, spawn, unavailable


class JsonLinesTransport:
    def __init__(
        self,
        name: str,
        command: Sequence[str],
        timeout: float = 30.0,
        stderr_path: Path | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.cwd = cwd
        self.name = name
        self.command = tuple(command)
        self.timeout = timeout
        self.stderr_path = stderr_path
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._buffer = bytearray()
        self._next_id = 0
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        """The running provider's process id (tests check restarts with it)."""
        return self._proc.pid if self._proc is not None else None

    def call(self, request: Request) -> Reply:
        with self._lock:
            try:
                return self._call(request)
            except ProviderError as err:
                return Reply.failure(err)

    def close(self) -> None:
        with self._lock:
            self._stop(graceful=True)

    def _call(self, request: Request) -> Reply:
        self._next_id += 1
        rid = self._next_id
        line = encode_request(request, {"id": rid}) + b"\n"
        deadline = time.monotonic() + self.timeout
        if not self._send(self._running(), line, deadline):
            # It died since the last call (crash): start a fresh one and send once more;
            # the dead one never read this request, so nothing can run twice.
            self._stop()
            if not self._send(self._running(), line, deadline):
                raise self._died("closed its input")
        raw = self._read_line(deadline)
        try:
            doc = decode_document(self.name, raw)
        except ProviderError:
            self._stop()  # a line that is not JSON leaves the stream out of step
            raise
        if not isinstance(doc, dict) or doc.get("id") != rid:
            got = doc.get("id") if isinstance(doc, dict) else None
            self._stop()
            raise named_error(
                self.name,
                ErrorCode.INTERNAL,
                f"answered garbage (reply id {got!r} for request id {rid}); restarting it",
            )
        return decode_reply(self.name, doc)

    def _running(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        self._stop()
        stderr: int | IO[bytes] = subprocess.DEVNULL
        if self.stderr_path is not None:
            self.stderr_path.parent.mkdir(parents=True, exist_ok=True)
            self._stderr = stderr = open(self.stderr_path, "ab")  # noqa: SIM115 - lives with proc
        self._proc = spawn(self.name, self.command, stderr, self.cwd)
        assert self._proc.stdin is not None
        os.set_blocking(self._proc.stdin.fileno(), False)  # writes wait in _send, timed
        return self._proc

    def _send(self, proc: subprocess.Popen[bytes], line: bytes, deadline: float) -> bool:
        """Write the whole line before the deadline; False when the provider's input is closed."""
        assert proc.stdin is not None
        fd = proc.stdin.fileno()
        view = memoryview(line)
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_WRITE)
            while view:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise self._timed_out("did not read its request")
                try:
                    view = view[os.write(fd, view):]
                except BlockingIOError:
                    continue
                except BrokenPipeError:
                    return False
        return True

    def _read_line(self, deadline: float) -> bytes:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        fd = proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while (end := self._buffer.find(b"\n")) < 0:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise self._timed_out("did not answer")
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise self._died("closed its output")
                self._buffer += chunk
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        return line

    def _timed_out(self, what: str) -> ProviderError:
        self._stop()
        detail = f"{what} within {self.timeout:g}s (killed; restarts on next call)"
        return named_error(self.name, ErrorCode.DEADLINE_EXCEEDED, detail)

    def _died(self, what: str) -> ProviderError:
        proc = self._proc
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=1)  # closed its pipes but still runs: _stop kills it
        self._stop()
        code = proc.returncode if proc is not None and proc.returncode is not None else 0
        where = f"; stderr in {self.stderr_path}" if self.stderr_path else ""
        return unavailable(
            self.name, f"{what} ({exit_detail(code)}{where}); restarts on next call"
        )

    def _stop(self, graceful: bool = False) -> None:
        proc, self._proc = self._proc, None
        self._buffer.clear()
        if proc is not None:
            if graceful and proc.stdin is not None:
                with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                    proc.stdin.close()  # a provider exits when its input ends
                    proc.wait(timeout=2)
            if proc.poll() is None:
                kill_tree(proc)
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

