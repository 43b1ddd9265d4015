"""A provider's stderr, redacted line by line, into ``<workdir>/providers/<name>/stderr.log``.

External providers may print anything on stderr, a credential they were given included.
Each complete line goes through ``compiler.core.secrets.Redactor.text`` before it is written, so
a secret that arrives split across reads is still found; a line longer than
``MAX_LINE`` is dropped whole, never cut (a cut could split a secret). The log is created
0600 (an existing one is made 0600), is never opened through a symbolic link, and moves
to ``stderr.log.1`` past ``LOG_LIMIT``: a provider that writes without end fills neither
memory nor the disk. The last line is kept for error messages.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from compiler.core.private import FILE_MODE, private_dir
from compiler.core.secrets import Redactor
from reconciler.protocol import ErrorCode, ProviderError
from reconciler.transports.base import named_error
from reconciler.transports.process import spawn

MAX_LINE = 1 << 20  # bytes of one line; a longer one is dropped
LOG_LIMIT = 16 << 20  # bytes of stderr.log before it moves to stderr.log.1
LOG_MODE = FILE_MODE
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC


def open_log(provider: str, path: Path) -> int:
    """The log's descriptor, owner-only whatever mode the file had; UNAVAILABLE otherwise."""
    fd = -1
    try:
        private_dir(path.parent)
        fd = os.open(path, _FLAGS, LOG_MODE)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        os.fchmod(fd, LOG_MODE)
    except OSError as err:
        if fd >= 0:
            os.close(fd)
        raise named_error(provider, ErrorCode.UNAVAILABLE,
                          f"cannot open its stderr log {path}: {err.strerror}") from None
    return fd


class StderrLog:
    """Receives a provider's stderr in chunks of any size and writes it, redacted, by lines."""

    def __init__(self, provider: str, path: Path | None, secrets: Sequence[str] = ()) -> None:
        self.provider = provider
        self.path = path
        self.last_line = ""  # the last non-empty line, redacted, for error messages
        self._redact = Redactor.of(secrets)  # resolved once per provider process
        self._fd = open_log(provider, path) if path is not None else None
        self._pending = bytearray()
        self._dropping = False  # inside a line longer than MAX_LINE

    def feed(self, chunk: bytes) -> None:
        self._pending += chunk
        while (end := self._pending.find(b"\n")) >= 0:
            line = bytes(self._pending[:end])
            del self._pending[: end + 1]
            if self._dropping:
                self._dropping = False
            else:
                self._line(line)
        if len(self._pending) > MAX_LINE:
            self._pending.clear()
            if not self._dropping:
                self._dropping = True
                self._write(f"[a stderr line longer than {MAX_LINE} bytes was dropped]")

    def finish(self) -> None:
        """The provider closed its stderr: write what is left of the last line, close the log."""
        if self._pending and not self._dropping:
            self._line(bytes(self._pending))
        self._pending.clear()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def follow(self, stream: IO[bytes]) -> threading.Thread:
        """Feed from ``stream`` in a daemon thread until it ends, then ``finish`` and close it.

        The thread owns the stream: closing a descriptor another thread reads from could
        close a reused one, so the caller only ends the provider and joins the thread."""
        def pump() -> None:
            try:
                while chunk := os.read(stream.fileno(), 1 << 16):
                    self.feed(chunk)
            except OSError:
                pass  # a read error ends the log like the end of the stream
            finally:
                self.finish()
                stream.close()

        thread = threading.Thread(target=pump, name=f"stderr of {self.provider}", daemon=True)
        thread.start()
        return thread

    def _line(self, raw: bytes) -> None:
        text = self._redact.text(raw.decode("utf-8", "backslashreplace").rstrip("\r"))
        if text.strip():
            self.last_line = text.strip()
        self._write(text)

    def _write(self, text: str) -> None:
        if self._fd is None:
            return
        data = (text + "\n").encode()
        with contextlib.suppress(OSError):  # a full disk must not fail the provider's call
            os.write(self._fd, data)
            if os.fstat(self._fd).st_size > LOG_LIMIT:
                self._rotate()

    def _rotate(self) -> None:
        """Move the full log aside (one old file is kept) and go on in a fresh one."""
        assert self.path is not None and self._fd is not None
        with contextlib.suppress(OSError):
            if os.stat(self.path, follow_symlinks=False).st_ino == os.fstat(self._fd).st_ino:
                os.replace(self.path, self.path.with_name(self.path.name + ".1"))
        os.close(self._fd)
        self._fd = None
        with contextlib.suppress(ProviderError):
            self._fd = open_log(self.provider, self.path)


def spawn_logged(provider: str, command: Sequence[str], cwd: Path | None, path: Path | None,
                 secrets: Sequence[str]) -> tuple[subprocess.Popen[bytes], StderrLog]:
    """Start a provider command with its stderr going to a redacted log (closed if the
    command cannot start), so every process transport logs the same way."""
    log = StderrLog(provider, path, secrets)
    try:
        return spawn(provider, command, subprocess.PIPE, cwd), log
    except ProviderError:
        log.finish()
        raise
