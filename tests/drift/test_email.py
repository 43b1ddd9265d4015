"""``xce-drift --notify`` end to end: the drifted world (tests/drift/world.py) mailed through
real SMTP servers (tests/drift/mailserver.py) and parsed on arrival.

STARTTLS and implicit TLS with a certificate made for the test, a login by secret
reference, routing by kind and provider, one message per run with news and none without,
``--dry-run`` .eml files; and servers that refuse the login, drop the connection in the
middle of a message or never answer: each a clear error naming host:port, within the
timeout, nothing marked notified, and the next run sends it. The SMTP password (a
canary) appears in no output, message, file or ledger row.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import Path

import pytest

from compiler.contract.drift import Notify
from reconciler.notify import email as mail_codes
from reconciler.notify.email import SendFailed, send
from reconciler.state import open_store
from tests.drift.mailserver import (
    USER,
    Inbox,
    Tls,
    drops_mid_message,
    make_certificate,
    raw_server,
    silent,
    smtp_server,
)
from tests.drift.world import run_drift
from tests.e2e.workspace import CliRun, Workspace

CANARY = "Canary-pw-5e0c71b4"  # the SMTP password: must appear nowhere
ENV = "XCE_TEST_SMTP_PASSWORD"
ROUTES = """    routes:
      - {kind: volume-dir, to: [storage@example.org]}
      - {kind: quota, to: [storage@example.org, quota-owner@example.org]}
      - {provider: cloud, to: [cloud@example.org]}
"""


def notify_yaml(port: int, tls: str, cert: Tls | None, *, login: bool = True,
                digest: str = "never") -> str:
    smtp = ["host: 127.0.0.1", f"port: {port}", f"tls: {tls}", "timeout: 1s"]
    if cert is not None:
        smtp.append(f"ca_file: {cert.cert}")
    if login:
        smtp += [f"user: {USER}", f"password: env:{ENV}"]
    body = "\n".join(f"      {line}" for line in smtp)
    return (f"version: 1\ndrift:\n  notify:\n    smtp:\n{body}\n"
            "    from: XCE drift <drift@example.org>\n    to: [admins@example.org]\n"
            f"    reply_to: help@example.org\n    digest: {digest}\n{ROUTES}")


@pytest.fixture(scope="session")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> Tls:
    return make_certificate(tmp_path_factory.mktemp("tls"))


class Mailing:
    """The world's site copied with a drift.notify section, a state store of the test's
    own, and xce-drift --notify run against them."""

    def __init__(self, world: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                 monkeypatch: pytest.MonkeyPatch) -> None:
        site = tmp_path / "site-config"
        shutil.copytree(world.site, site)
        self.ws = Workspace(site=site, workdir=world.workdir, env={**world.env, ENV: CANARY})
        self.state = tmp_path / "state.sqlite"
        self.tmp = tmp_path
        self._capsys, self._monkeypatch = capsys, monkeypatch
        self.runs: list[CliRun] = []

    def configure(self, text: str) -> None:
        (self.ws.site / "drift.yaml").write_text(text)

    def run(self, *args: str) -> CliRun:
        done = run_drift(self.ws, self._capsys, self._monkeypatch, "--state", str(self.state),
                         "--notify", *args)
        self.runs.append(done)
        return done

    def pending(self) -> int:
        with open_store(str(self.state), self.tmp / "unused") as store:
            return len(store.pending_notifications("e2e").fingerprints)

    def assert_no_secret(self, *more: bytes) -> None:
        """The canary is in no output, no message, and no byte of the state store."""
        for run in self.runs:
            assert CANARY not in run.out and CANARY not in run.err
        for blob in (*more, *(p.read_bytes() for p in self.tmp.rglob("*") if p.is_file())):
            assert CANARY.encode() not in blob


@pytest.fixture
def mailing(world: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str],
            monkeypatch: pytest.MonkeyPatch) -> Mailing:
    return Mailing(world, tmp_path, capsys, monkeypatch)


def by_recipients(inbox: Inbox) -> dict[tuple[str, ...], EmailMessage]:
    return {r.recipients: r.message for r in inbox.received}


def _text(message: EmailMessage, subtype: str) -> str:
    part = message.get_body(preferencelist=(subtype,))
    assert part is not None and part.get_content_type() == f"text/{subtype}"
    content: str = part.get_content()
    return content


def test_a_starttls_run_mails_each_owner_their_drift_once(mailing: Mailing,
                                                          certificate: Tls) -> None:
    inbox = Inbox(CANARY)
    with smtp_server(inbox, "starttls", certificate) as port:
        mailing.configure(notify_yaml(port, "starttls", certificate))
        first = mailing.run()
        assert first.code == 2, first.err
        assert inbox.logins == [USER]
        got = by_recipients(inbox)
        # one message per address, with what concerns it (storage sees both, the quota
        # owner only the quota)
        assert set(got) == {("admins@example.org",), ("cloud@example.org",),
                            ("storage@example.org",), ("quota-owner@example.org",)}
        storage = got[("storage@example.org",)]
        assert storage["Subject"] == ("[xce-drift] e2e: 2 new, 0 changed, 0 resolved; "
                                      "2 findings open")
        assert "volume-dir/shared/bob" in _text(storage, "plain")
        assert "quota/shared/user/alice" in _text(storage, "plain")
        assert "quota/shared/user/alice" in _text(storage, "html")
        assert "host/cn02" not in _text(storage, "plain")  # not theirs
        owner = got[("quota-owner@example.org",)]
        assert "quota/shared/user/alice" in _text(owner, "plain")
        assert "volume-dir/shared/bob" not in _text(owner, "plain")
        admins = got[("admins@example.org",)]
        assert admins.get_content_type() == "multipart/alternative"
        assert [p.get_content_type() for p in admins.iter_parts()] == ["text/plain", "text/html"]
        assert admins["From"] == "XCE drift <drift@example.org>"
        assert admins["Reply-To"] == "help@example.org"
        assert admins["Auto-Submitted"] == "auto-generated"
        assert "host/cn02" in _text(admins, "html")
        assert {r.mail_from for r in inbox.received} == {"drift@example.org"}
        assert "Sent 4 message(s) through 127.0.0.1:" in first.err
        second = mailing.run()
        assert second.code == 2 and len(inbox.received) == 4  # the same drift: no new mail
        assert "Nothing new since the last notification" in second.err
        assert inbox.logins == [USER]  # nothing to send: not even a connection
    assert mailing.pending() == 0
    mailing.assert_no_secret(*(r.raw for r in inbox.received))


def test_ignored_drift_is_counted_but_not_mailed(mailing: Mailing) -> None:
    inbox = Inbox(CANARY)
    with smtp_server(inbox) as port:
        mailing.configure(notify_yaml(port, "none", None, login=False)
                          + "  ignore:\n    - {kind: quota, reason: raised by the helpdesk}\n")
        assert mailing.run().code == 2
    got = by_recipients(inbox)
    assert ("quota-owner@example.org",) not in got  # its only drift is ignored
    storage = _text(got[("storage@example.org",)], "plain")
    assert "quota/shared/user/alice" not in storage and "volume-dir/shared/bob" in storage
    assert "1 more ignored by the site's rules (counted, not notified)" in storage


def test_implicit_tls(mailing: Mailing, certificate: Tls) -> None:
    inbox = Inbox(CANARY)
    with smtp_server(inbox, "implicit", certificate) as port:
        mailing.configure(notify_yaml(port, "implicit", certificate))
        assert mailing.run().code == 2
    assert len(inbox.received) == 4 and inbox.logins == [USER]


def test_a_certificate_nobody_vouches_for_is_refused(mailing: Mailing, certificate: Tls) -> None:
    inbox = Inbox(CANARY)
    with smtp_server(inbox, "starttls", certificate) as port:
        mailing.configure(notify_yaml(port, "starttls", None))  # no ca_file: the system's CAs
        run = mailing.run()
    assert run.code == 1 and f"error[{mail_codes.TLS_FAILED}]" in run.err
    assert "certificate is not trusted" in run.err and not inbox.received
    assert inbox.logins == []  # the password never went to a server it could not verify


def test_dry_run_writes_eml_files_and_marks_nothing(mailing: Mailing) -> None:
    mailing.configure(notify_yaml(9, "none", None, login=False))  # port 9: nothing listens
    out = mailing.tmp / "outbox"
    run = mailing.run("--dry-run", str(out))
    assert run.code == 2, run.err
    files = sorted(out.glob("*.eml"))
    assert len(files) == 4 and f"Wrote 4 message(s) to {out}/" in run.err
    parsed = [BytesParser(policy=policy.default).parsebytes(f.read_bytes()) for f in files]
    assert {m["To"] for m in parsed} >= {"admins@example.org", "cloud@example.org"}
    assert all(m["Subject"].startswith("[xce-drift] e2e: ") for m in parsed)
    assert mailing.pending() == 7  # nothing marked: the next real run sends it all
    mailing.assert_no_secret()


def test_dry_run_goes_with_notify(mailing: Mailing, capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    run = run_drift(mailing.ws, capsys, monkeypatch, "--dry-run", str(mailing.tmp / "x"))
    assert run.code == 1 and "--dry-run DIR goes with --notify" in run.err
    unrecorded = mailing.run("--no-record")
    assert unrecorded.code == 1 and "leave out --no-record" in unrecorded.err
    nothing = mailing.run()  # the world's copy has no drift.notify yet
    assert nothing.code == 1 and f"error[{mail_codes.NO_SETTINGS}]" in nothing.err


Broken = Callable[[Inbox, Tls], AbstractContextManager[int]]


def _refuses(inbox: Inbox, cert: Tls) -> AbstractContextManager[int]:
    inbox.refuse_logins = True
    return smtp_server(inbox, "starttls", cert)


FAILURES: dict[str, tuple[Broken, str, str, str]] = {
    "refused login": (_refuses, "starttls", mail_codes.LOGIN_REFUSED,
                      f"logging in as {USER}: it answered 535"),
    "dropped mid-message": (lambda inbox, cert: raw_server(drops_mid_message), "none",
                            mail_codes.SEND_FAILED, "sending message 1 of 4"),
    "never answers": (lambda inbox, cert: raw_server(silent), "none", mail_codes.UNREACHABLE,
                      "no answer within 1 s"),
}


@pytest.mark.parametrize("failure", list(FAILURES))
def test_a_failed_send_marks_nothing_and_the_next_run_sends_it(
        failure: str, mailing: Mailing, certificate: Tls) -> None:
    server, tls, code, why = FAILURES[failure]
    inbox = Inbox(CANARY)
    with server(inbox, certificate) as port:
        mailing.configure(notify_yaml(port, tls, certificate, login=tls != "none"))
        run = mailing.run()
    assert run.code == 1, run.err
    assert f"SMTP server 127.0.0.1:{port}: error[{code}]: " in run.err
    assert why in run.err and "Traceback" not in run.err, run.err
    # "never answers" names the site's 1 s timeout: smtplib's default (none) would hang here,
    # and a wall-clock bound would only fail a correct program on a busy machine
    assert mailing.pending() == 7 and not inbox.received
    good = Inbox(CANARY)
    with smtp_server(good, "starttls", certificate) as port:
        mailing.configure(notify_yaml(port, "starttls", certificate))
        assert mailing.run().code == 2
    assert len(good.received) == 4 and mailing.pending() == 0
    mailing.assert_no_secret(*(r.raw for r in good.received))


@pytest.fixture
def no_password(mailing: Mailing) -> Iterator[None]:
    mailing.ws.env.pop(ENV)
    yield


def test_a_password_reference_that_does_not_resolve(mailing: Mailing, certificate: Tls,
                                                    no_password: None) -> None:
    inbox = Inbox(CANARY)
    with smtp_server(inbox, "starttls", certificate) as port:
        mailing.configure(notify_yaml(port, "starttls", certificate))
        run = mailing.run()
    assert run.code == 1 and f"error[{mail_codes.SECRET_UNREADABLE}]" in run.err
    assert f"env:{ENV} is not set" in run.err and mailing.pending() == 7


def test_a_ca_file_that_cannot_be_read_is_a_tls_problem(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-ca.pem"
    smtp = {"host": "127.0.0.1", "port": 9, "ca_file": str(missing)}
    notify = Notify.model_validate({"smtp": smtp, "from": "drift@example.org",
                                    "to": ["admins@example.org"]})
    with pytest.raises(SendFailed) as failed:
        send(notify, [])
    problem = failed.value.problem
    assert problem.code == mail_codes.TLS_FAILED and problem.subject == "SMTP server 127.0.0.1:9"
    assert f"reading the CA certificates {missing}" in problem.message
