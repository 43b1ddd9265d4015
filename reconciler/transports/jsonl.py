"""The persistent JSON-lines transport: one long-lived provider process, a line per message.

For providers that are expensive to start (a cloud SDK, a license-server session).
Each request line carries an ``id`` that its reply line must echo; a reply that is not
JSON or has the wrong id means the stream is out of step, so the process is killed and
the next call starts a fresh one (restart on crash). Calls are serialized per transport.
The timeout covers writing the request too: a provider that stops reading its input
cannot block the caller on a full pipe. A reply line longer than the binding's
``max_reply_bytes`` stops the process (it restarts on the next call); its stderr is
written, redacted, to its log by a thread that lives as long as the process.
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

from reconciler.protocol import ErrorCode, ProviderError, Reply, Request
from reconciler.transports.base import (
    DEFAULT_MAX_REPLY_BYTES,
    DEFAULT_TIMEOUT,
    decode_document,
    decode_reply,
    encode_request,
    named_error,
    reply_too_large,
)
from reconciler.transports.process import exit_detail, kill_tree, unavailable, write_some
from reconciler.transports.stderr import StderrLog, spawn_logged

_PUMP_GRACE = 2.0  # seconds for the stderr thread to drain a stopped provider's last lines


class JsonLinesTransport:
    def __init__(
        self,
        name: str,
        command: Sequence[str],
        timeout: float = DEFAULT_TIMEOUT,
        stderr_path: Path | None = None,
        cwd: Path | None = None,
        *,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
        secrets: Sequence[str] = (),
    ) -> None:
        self.cwd = cwd
        self.name = name
        self.command = tuple(command)
        self.timeout = timeout
        self.stderr_path = stderr_path
        self.max_reply_bytes = max_reply_bytes
        self.secrets = tuple(secrets)  # references whose values are redacted from stderr
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: tuple[StderrLog, threading.Thread] | None = None
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
        proc, log = spawn_logged(self.name, self.command, self.cwd, self.stderr_path,
                                 self.secrets)
        assert proc.stdin is not None and proc.stderr is not None
        self._proc, self._stderr = proc, (log, log.follow(proc.stderr))
        os.set_blocking(proc.stdin.fileno(), False)  # writes wait in _send, timed
        return proc

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
                rest = write_some(fd, view)
                if rest is None:
                    return False
                view = rest
        return True

    def _read_line(self, deadline: float) -> bytearray:
        """The next line, up to the cap; only new bytes are searched for its end, so a
        long line costs linear time."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        fd = proc.stdout.fileno()
        searched = 0
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while (end := self._buffer.find(b"\n", searched)) < 0:
                searched = len(self._buffer)
                if searched > self.max_reply_bytes:
                    raise self._too_large()
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise self._timed_out("did not answer")
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise self._died("closed its output")
                self._buffer += chunk
        if end > self.max_reply_bytes:
            raise self._too_large()
        line = self._buffer[:end]
        del self._buffer[: end + 1]
        return line

    def _timed_out(self, what: str) -> ProviderError:
        self._stop()
        detail = f"{what} within {self.timeout:g}s (killed; restarts on next call)"
        return named_error(self.name, ErrorCode.DEADLINE_EXCEEDED, detail)

    def _too_large(self) -> ProviderError:
        self._stop()
        return reply_too_large(self.name, self.max_reply_bytes, "killed; restarts on next call")

    def _died(self, what: str) -> ProviderError:
        proc, stderr = self._proc, self._stderr
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=1)  # closed its pipes but still runs: _stop kills it
        self._stop()
        code = proc.returncode if proc is not None and proc.returncode is not None else 0
        last = stderr[0].last_line.encode() if stderr is not None else b""
        where = f"; stderr in {self.stderr_path}" if self.stderr_path else ""
        return unavailable(
            self.name, f"{what} ({exit_detail(code, last)}{where}); restarts on next call"
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
        if self._stderr is not None:  # the process is gone: its stderr ends soon
            self._stderr[1].join(_PUMP_GRACE)
            self._stderr = None

