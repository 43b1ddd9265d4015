"""Real SMTP servers on 127.0.0.1 for the email tests: aiosmtpd (plain, STARTTLS, implicit
TLS, with a login), one that refuses every login, one that drops the connection in the
middle of a message, and a bare socket that accepts and never answers.

A self-signed certificate for ``localhost`` is made per session with ``openssl req``; the
client trusts it through ``drift.notify.smtp.ca_file``, so TLS is verified for real.
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session

USER = "xce-drift"


@dataclass(frozen=True, slots=True)
class Received:
    """One message as the server got it, parsed."""

    mail_from: str
    recipients: tuple[str, ...]
    raw: bytes

    @property
    def message(self) -> EmailMessage:
        parsed = BytesParser(policy=policy.default).parsebytes(self.raw)
        assert isinstance(parsed, EmailMessage)
        return parsed


@dataclass
class Inbox:
    """What an aiosmtpd server received, and the logins it saw."""

    password: str
    refuse_logins: bool = False
    received: list[Received] = field(default_factory=list)
    logins: list[str] = field(default_factory=list)

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        content = envelope.original_content or b""
        self.received.append(Received(str(envelope.mail_from),
                                      tuple(envelope.rcpt_tos), content))
        return "250 OK"

    def authenticate(self, server: SMTP, session: Session, envelope: Envelope, mechanism: str,
                     auth_data: Any) -> AuthResult:
        assert isinstance(auth_data, LoginPassword)
        self.logins.append(auth_data.login.decode())
        ok = (not self.refuse_logins and auth_data.login.decode() == USER
              and auth_data.password.decode() == self.password)
        return AuthResult(success=ok, handled=False)  # aiosmtpd answers 535 itself


@dataclass(frozen=True, slots=True)
class Tls:
    cert: Path
    key: Path

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert, self.key)
        return context


def make_certificate(folder: Path) -> Tls:
    """A self-signed certificate for localhost and 127.0.0.1, valid for a day."""
    if shutil.which("openssl") is None:
        pytest.fail("openssl is needed to make the test's certificate (apt-get install openssl)")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True)
    return Tls(cert, key)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def smtp_server(inbox: Inbox, tls: str = "none", certificate: Tls | None = None
                ) -> Iterator[int]:
    """aiosmtpd on a free port (yielded): ``tls`` none, starttls (required) or implicit;
    with a certificate, logins are offered (over TLS only, aiosmtpd's default)."""
    kwargs: dict[str, Any] = {"authenticator": inbox.authenticate}
    if tls == "starttls":
        assert certificate is not None
        kwargs.update(tls_context=certificate.server_context(), require_starttls=True)
    elif tls == "implicit":
        assert certificate is not None
        # aiosmtpd counts only STARTTLS as TLS: the login is over TLS here all the same
        kwargs.update(ssl_context=certificate.server_context(), auth_require_tls=False)
    port = _free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port,
                            server_hostname="localhost", ready_timeout=10, **kwargs)
    controller.start()
    try:
        yield port
    finally:
        controller.stop()


@contextmanager
def raw_server(talk: Any) -> Iterator[int]:
    """A TCP server whose each connection ``talk(conn)`` handles, in a thread."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()
    conns: list[socket.socket] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            conns.append(conn)
            threading.Thread(target=talk, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for conn in conns:
            conn.close()
        listener.close()


def silent(conn: socket.socket) -> None:
    """Accept and never say a word (the connection stays open until the test ends)."""


def drops_mid_message(conn: socket.socket) -> None:
    """Speak SMTP until the message starts, take a little of it, then hang up."""
    reader = conn.makefile("rb")

    def say(line: str) -> None:
        conn.sendall(line.encode() + b"\r\n")

    say("220 localhost ESMTP the dropping server")
    for line in reader:
        verb = line[:4].upper()
        if verb in (b"EHLO", b"HELO"):
            say("250 localhost")
        elif verb in (b"MAIL", b"RCPT"):
            say("250 OK")
        elif verb == b"DATA":
            say("354 go ahead")
            reader.read(200)
            break
        else:
            say("500 what?")
    conn.shutdown(socket.SHUT_RDWR)
    conn.close()
