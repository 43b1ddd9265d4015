"""Drift reports as email: the message (text and HTML from the report's templates) and
its sending over SMTP, with STARTTLS or implicit TLS and a login by secret reference.

The password is read (``compiler.core.secrets.resolve``) just before the login and never
kept; what a server answers is redacted of it before any message shows it. Every
failure — no connection, no answer within the timeout, TLS, a refused login, a dropped
connection mid-message — is a ``SendFailed`` naming the server as ``host:port`` and how
many messages had gone: the caller marks only those as notified.
"""

from __future__ import annotations

import smtplib
import socket
import ssl
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid, parseaddr
from pathlib import Path

from compiler.contract.drift import Notify, Smtp
from compiler.core.file_io import write_atomic
from compiler.core.problems import Hints, Problem, Severity, UserError
from compiler.core.secrets import Redactor, SecretError, resolve
from compiler.core.times import format_utc
from reconciler.drift.model import DriftReport
from reconciler.render.drift import FORMATS, Shown

# xce-drift --notify's problem codes (XCE880–XCE889, docs/errors.md "Drift rules and email")
NO_SETTINGS = "XCE880"
UNREACHABLE = "XCE881"
TLS_FAILED = "XCE882"
LOGIN_REFUSED = "XCE883"
SEND_FAILED = "XCE884"
SECRET_UNREADABLE = "XCE885"
BUSY = "XCE886"  # a warning: another run is notifying the site
CANNOT_WRITE = "XCE887"
HINTS = Hints({
    NO_SETTINGS: "add 'notify:' under the site's 'drift:' section (docs/drift.md, \"Email\")",
    UNREACHABLE: "check drift.notify.smtp (host, port, tls) and that this machine may reach "
    "the server; the next run sends what this one could not",
    TLS_FAILED: "check drift.notify.smtp.tls (starttls on 587, implicit on 465) and ca_file "
    "for a server whose certificate a private CA signs",
    LOGIN_REFUSED: "check drift.notify.smtp.user and the secret its password refers to",
    SEND_FAILED: "the next run sends every message that did not go; see the server's log",
    SECRET_UNREADABLE: "set the variable or create the file the password reference names",
    BUSY: "nothing to do: that run sends the news, or the next run does if it fails",
    CANNOT_WRITE: "check that the --dry-run folder can be written",
})


@dataclass(frozen=True, slots=True)
class Mail:
    """One message, its envelope recipients, and the drift (ledger fingerprints) it tells of."""

    message: EmailMessage
    recipients: tuple[str, ...]
    fingerprints: frozenset[str]


def subject(report: DriftReport, open_count: int, digest: str | None) -> str:
    """``[xce-drift] hpc-east: 2 new, 1 changed, 0 resolved; 5 findings open``; a digest
    says so, and "nothing new" when there is no news."""
    news = report.since_last
    told = news.summary() if news is not None and news.anything else "nothing new"
    head = f"{digest} digest, " if digest else ""
    noun = "finding" if open_count == 1 else "findings"
    return f"[xce-drift] {report.site}: {head}{told}; {open_count} {noun} open"


def compose(shown: Shown, notify: Notify, to: Sequence[str], title: str) -> EmailMessage:
    """A multipart/alternative message: the text report, then the HTML one. The report is
    redacted already; the SMTP password is masked too, should anything have echoed it."""
    password = notify.smtp.password
    hidden = Redactor.of([password] if password is not None else [])
    message = EmailMessage()
    message["Subject"] = hidden.text(title)
    message["From"] = notify.sender
    message["To"] = ", ".join(to)
    if notify.reply_to is not None:
        message["Reply-To"] = notify.reply_to
    message["Date"] = format_datetime(shown.report.at)
    message["Message-ID"] = make_msgid("xce-drift", domain=address(notify.sender).split("@")[1])
    message["Auto-Submitted"] = "auto-generated"  # RFC 3834: no vacation replies to it
    message["X-XCE-Site"] = shown.report.site
    message.set_content(hidden.text(FORMATS.render(shown, "text")))
    message.add_alternative(hidden.text(FORMATS.render(shown, "html")), subtype="html")
    return message


def address(written: str) -> str:
    """The address of ``Name <name@example.org>`` (the compiler checked its form)."""
    return parseaddr(written)[1]


def write_eml(folder: Path, mails: Sequence[Mail], site: str, at: datetime) -> list[Path]:
    """``--dry-run``: each message as an ``.eml`` file a mail client opens."""
    stamp = format_utc(at, "stamp")
    paths = [folder / f"{site}-{stamp}-{i}.eml" for i in range(1, len(mails) + 1)]
    for path, mail in zip(paths, mails, strict=True):
        try:
            write_atomic(path, mail.message.as_bytes())
        except OSError as err:
            raise UserError([HINTS.problem(CANNOT_WRITE, f"cannot write the message: "
                                           f"{err.strerror or err}", str(path))]) from None
    return paths


class SendFailed(Exception):
    """Sending stopped: ``problem`` says where and why; ``sent`` messages had gone."""

    def __init__(self, problem: Problem, sent: int = 0) -> None:
        super().__init__(problem.message)
        self.problem = problem
        self.sent = sent


@dataclass(frozen=True, slots=True)
class _Server:
    smtp: Smtp
    hidden: Redactor  # the password's forms

    def why(self, err: OSError) -> str:
        """What went wrong, in words, without the password."""
        return self.hidden.text(_why(err, self.smtp.timeout))

    @contextmanager
    def step(self, code: str, doing: str, sent: int = 0) -> Iterator[None]:
        """Turn a failure of ``doing`` into SendFailed; any TLS failure is a TLS problem."""
        try:
            yield
        except OSError as err:  # smtplib's, ssl's and socket's errors all are
            chosen = TLS_FAILED if isinstance(err, ssl.SSLError) else code
            raise SendFailed(HINTS.problem(chosen, f"{doing}: {self.why(err)}",
                                           f"SMTP server {self.smtp.address}"), sent) from None


def _timed_out(err: BaseException | None) -> bool:
    """Whether a timeout is behind ``err`` (smtplib turns one into "connection closed")."""
    while err is not None:
        if isinstance(err, TimeoutError):
            return True
        err = err.__cause__ or err.__context__
    return False


def _why(err: OSError, timeout: float) -> str:
    if _timed_out(err):
        return f"no answer within {timeout:g} s (drift.notify.smtp.timeout)"
    if isinstance(err, smtplib.SMTPRecipientsRefused):
        return "it refused " + ", ".join(f"{rcpt} ({code} {_text(msg)})"
                                         for rcpt, (code, msg) in err.recipients.items())
    if isinstance(err, smtplib.SMTPResponseException):
        return f"it answered {err.smtp_code} {_text(err.smtp_error)}"
    if isinstance(err, smtplib.SMTPServerDisconnected):
        return "it closed the connection"
    if isinstance(err, ssl.SSLCertVerificationError):
        return f"its certificate is not trusted ({err.verify_message})"
    if isinstance(err, ConnectionRefusedError):
        return "connection refused (no server listens there)"
    if isinstance(err, socket.gaierror):
        return f"unknown host ({err.strerror})"
    return err.strerror or str(err) or type(err).__name__


def _text(raw: bytes | str) -> str:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    return " ".join(text.split())


def _password(smtp: Smtp) -> str | None:
    if smtp.password is None:
        return None
    try:
        return resolve(smtp.password)
    except SecretError as err:
        raise SendFailed(HINTS.problem(SECRET_UNREADABLE, f"the SMTP password: {err.message}",
                                       f"SMTP server {smtp.address}")) from None


@contextmanager
def _session(smtp: Smtp) -> Iterator[tuple[smtplib.SMTP, _Server]]:
    """A connected, TLS-protected (as configured) and logged-in SMTP session."""
    password = _password(smtp)
    server = _Server(smtp, Redactor.of([smtp.password] if smtp.password else []))
    host, port = smtp.address.rsplit(":", 1)
    with server.step(TLS_FAILED, f"reading the CA certificates {smtp.ca_file or '(system)'}"):
        context = ssl.create_default_context(cafile=smtp.ca_file)
    with server.step(UNREACHABLE, "connecting"):
        client = (smtplib.SMTP_SSL(host, int(port), timeout=smtp.timeout, context=context)
                  if smtp.tls == "implicit"
                  else smtplib.SMTP(host, int(port), timeout=smtp.timeout))
    try:
        with server.step(UNREACHABLE, "greeting"):
            client.ehlo()
        if smtp.tls == "starttls":
            with server.step(TLS_FAILED, "starting TLS"):
                if not client.has_extn("starttls"):
                    raise smtplib.SMTPNotSupportedError("it does not offer STARTTLS")
                client.starttls(context=context)
                client.ehlo()
        if smtp.user is not None and password is not None:
            with server.step(LOGIN_REFUSED, f"logging in as {smtp.user}"):
                client.login(smtp.user, password)
        yield client, server
    finally:
        client.close()


def send(notify: Notify, mails: Sequence[Mail]) -> None:
    """Send every mail in one session; SendFailed says how many had gone when it stopped."""
    sender = address(notify.sender)
    sent = 0
    with _session(notify.smtp) as (client, server):
        for mail in mails:
            with server.step(SEND_FAILED, f"sending message {sent + 1} of {len(mails)}", sent):
                client.send_message(mail.message, sender, list(mail.recipients))
            sent += 1
        with suppress(OSError):  # everything went: a server that hangs up on QUIT changes nothing
            client.quit()


def busy(site: str, holder: str) -> Problem:
    return HINTS.problem(BUSY, f"another run ({holder}) is notifying site {site}'s drift; "
                         "this run sent nothing", site, severity=Severity.WARNING)
