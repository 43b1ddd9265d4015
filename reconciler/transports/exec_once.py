"""The ``exec`` transport: one process per request, JSON request on stdin, reply on stdout.

Simple to write a provider for in any language, and nothing survives between calls, so
a provider that hangs is killed with its whole process group at the deadline. Its reply
is read up to the binding's ``max_reply_bytes``: one that writes without end is killed
there, so it cannot fill the caller's memory. Its stderr goes, redacted, to its log.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from reconciler.protocol import ErrorCode, ProviderError, Reply, Request
from reconciler.transports.base import (
    DEFAULT_MAX_REPLY_BYTES,
    DEFAULT_TIMEOUT,
    channel_error,
    decode_document,
    decode_reply,
    encode_request,
    named_error,
    reply_too_large,
)
from reconciler.transports.process import exit_detail, kill_tree, write_some
from reconciler.transports.stderr import StderrLog, spawn_logged

_CHUNK = 1 << 16


class ExecTransport:
    def __init__(
        self,
        name: str,
        command: Sequence[str],
        timeout: float = DEFAULT_TIMEOUT,
        cwd: Path | None = None,
        *,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
        stderr_path: Path | None = None,
        secrets: Sequence[str] = (),
    ) -> None:
        self.name = name
        self.command = tuple(command)
        self.timeout = timeout
        self.cwd = cwd  # the provider's state folder, where it may keep what it needs
        self.max_reply_bytes = max_reply_bytes
        self.stderr_path = stderr_path
        self.secrets = tuple(secrets)  # references whose values are redacted from stderr

    def call(self, request: Request) -> Reply:
        try:
            return self._call(request)
        except ProviderError as err:
            return Reply.failure(err)

    def _call(self, request: Request) -> Reply:
        deadline = time.monotonic() + self.timeout
        proc, log = spawn_logged(self.name, self.command, self.cwd, self.stderr_path,
                                 self.secrets)
        try:
            out = self._exchange(proc, encode_request(request) + b"\n", log, deadline)
            returncode = proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise self._timed_out() from None
        finally:
            if proc.poll() is None:
                kill_tree(proc)
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
            log.finish()
        return self._reply(out, returncode, exit_detail(returncode, log.last_line.encode()))

    def _exchange(self, proc: subprocess.Popen[bytes], payload: bytes, log: StderrLog,
                  deadline: float) -> bytearray:
        """Write the request and read the reply and stderr until the provider closes its
        output; the deadline and the size cap stop it (it is killed by the caller)."""
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        stdin, stdout, stderr = proc.stdin.fileno(), proc.stdout.fileno(), proc.stderr.fileno()
        os.set_blocking(stdin, False)
        left: memoryview | None = memoryview(payload)
        out = bytearray()
        reading = {stdout, stderr}
        with selectors.DefaultSelector() as sel:
            sel.register(stdin, selectors.EVENT_WRITE)
            for fd in reading:
                sel.register(fd, selectors.EVENT_READ)
            while reading:  # until the provider closes its stdout and stderr
                wait = deadline - time.monotonic()
                ready = sel.select(wait) if wait > 0 else []
                if not ready:
                    raise self._timed_out()
                for key, _ in ready:
                    if key.fd == stdin:
                        assert left is not None
                        left = write_some(stdin, left)
                        if not left:  # all written, or the provider stopped reading
                            sel.unregister(stdin)
                            proc.stdin.close()
                        continue
                    chunk = os.read(key.fd, _CHUNK)
                    if not chunk:
                        sel.unregister(key.fd)
                        reading.discard(key.fd)
                    elif key.fd == stderr:
                        log.feed(chunk)
                    else:
                        out += chunk
                        if len(out) > self.max_reply_bytes + 1:  # + its line end
                            raise reply_too_large(self.name, self.max_reply_bytes)
        if len(out) - out.endswith(b"\n") > self.max_reply_bytes:
            raise reply_too_large(self.name, self.max_reply_bytes)
        return out

    def _timed_out(self) -> ProviderError:
        detail = f"did not answer within {self.timeout:g}s (killed)"
        return named_error(self.name, ErrorCode.DEADLINE_EXCEEDED, detail)

    def _reply(self, out: bytearray, returncode: int, how: str) -> Reply:
        if not out or out.isspace():  # no copy of a reply that may be large
            code = ErrorCode.UNAVAILABLE if returncode else ErrorCode.INTERNAL
            return channel_error(self.name, code, f"gave no reply ({how})")
        try:
            return decode_reply(self.name, decode_document(self.name, out))
        except ProviderError:
            if returncode:
                return channel_error(self.name, ErrorCode.UNAVAILABLE, f"failed ({how})")
            raise

    def close(self) -> None:
        """Nothing to release: each call's process has already ended."""
