"""A TCP relay in front of the test PostgreSQL that can be restarted, as a pooler is.

``down()`` closes every relayed connection and stops listening (a client then gets
"connection refused" until ``up()`` listens again on the same port), so tests see what a
CI runner sees when PgBouncer restarts or the database fails over. Loopback only.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from urllib.parse import urlsplit, urlunsplit


class Pooler:
    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self._target = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self._parts = parts
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self.port = 0
        self.up()

    @property
    def url(self) -> str:
        """The database URL through this relay (same user, database and options)."""
        user = f"{self._parts.username}@" if self._parts.username else ""
        return urlunsplit(self._parts._replace(netloc=f"{user}127.0.0.1:{self.port}"))

    def up(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            closing, self._open = self._open, []
        for sock in [s for s in (listener,) if s is not None] + closing:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:  # closed by down()
                return
            try:
                server = socket.create_connection(self._target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open += [client, server]
            for src, dst in ((client, server), (server, client)):
                threading.Thread(target=_pipe, args=(src, dst), daemon=True).start()


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while chunk := src.recv(65536):
            dst.sendall(chunk)
    except OSError:
        pass
    for sock in (src, dst):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
