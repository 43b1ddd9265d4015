"""Notifying over a real state store (SQLite and PostgreSQL) and a real SMTP server: two
runs at once send one message, the weekly digest lists all open drift when it is due and
only then, and news is what changed since the last message."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from aiosmtpd.smtp import SMTP, Envelope, Session

from compiler.contract.drift import Notify
from reconciler.drift import ledger
from reconciler.drift.model import DriftReport, FieldDiff, Finding, tally
from reconciler.notify import email
from reconciler.notify.notifier import Notice, Notifier
from reconciler.render.drift import Templates
from reconciler.state import StateStore
from tests.drift.mailserver import Inbox, Received, smtp_server
from tests.drift.reports import sample
from tests.state.targets import Target

AT = datetime(2026, 3, 4, 9, 30, tzinfo=UTC)
DAY = timedelta(days=1)


def settings(port: int, digest: str = "never") -> Notify:
    return Notify.model_validate({
        "smtp": {"host": "127.0.0.1", "port": port, "tls": "none", "timeout": 5},
        "from": "drift@example.org", "to": ["admins@example.org"], "digest": digest})


def run(store: StateStore, notify: Notify, findings: tuple[Finding, ...],
        at: datetime) -> Notice:
    """One recorded xce-drift run and its notification, as make_report and --notify do."""
    site = "hpc-east"
    store.record_drift(site, tally(findings, 0), ledger.seen(findings), at=at)
    report = DriftReport(site, at, ledger.with_since(findings, store.open_drift(site)),
                         since_last=ledger.since_last(store.pending_notifications(site)),
                         recorded=True)
    return Notifier(notify).run(report, Templates(), store, at)


@dataclass
class SlowInbox(Inbox):
    """Holds each message until a run has returned (at most 30 s), so the second run comes
    while the first sends, whatever the machine's speed."""

    a_run_returned: threading.Event = field(default_factory=threading.Event)

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        await asyncio.get_running_loop().run_in_executor(None, self.a_run_returned.wait, 30)
        return await super().handle_DATA(server, session, envelope)


def test_two_runs_at_once_send_one_message(target: Target) -> None:
    inbox = SlowInbox("")
    findings = sample().findings
    notices: list[Notice] = []
    start = threading.Barrier(2)

    def one_run() -> None:
        with target.open() as store:
            start.wait()
            notices.append(run(store, settings(port), findings, AT))
        inbox.a_run_returned.set()

    with smtp_server(inbox) as port:
        threads = [threading.Thread(target=one_run) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(inbox.received) == 1
        busy = [n for n in notices if n.problems]
        assert len(busy) == 1 and busy[0].problems[0].code == email.BUSY
        assert not busy[0].failed  # the other run sends it: nothing went wrong here
        with target.open() as store:
            assert not store.pending_notifications("hpc-east").fingerprints
            assert run(store, settings(port), findings, AT + DAY) == Notice()
    assert len(inbox.received) == 1


def _subject(received: list[Received], i: int) -> str:
    return str(received[i].message["Subject"])


def _body(received: list[Received], i: int) -> str:
    part = received[i].message.get_body(preferencelist=("plain",))
    assert part is not None
    text: str = part.get_content()
    return text


def test_the_digest_lists_all_open_drift_when_due_and_news_between(store: StateStore) -> None:
    inbox = Inbox("")
    findings = sample().findings
    mode = next(f for f in findings if f.entry == "volume-dir/shared/alice")
    changed = tuple(replace(f, fields=(FieldDiff("spec.mode", "0700", "0777"),))
                    if f is mode else f for f in findings)
    with smtp_server(inbox) as port:
        weekly = settings(port, "weekly")
        steps: list[tuple[timedelta, tuple[Finding, ...]]] = [
            (0 * DAY, findings),  # never digested: a digest with all of it as news
            (1 * DAY, findings),  # no news, no digest due: nothing
            (2 * DAY, changed),  # news
            (7 * DAY - timedelta(minutes=30), changed),  # a week, about: the digest
            (8 * DAY, changed),  # nothing
            (9 * DAY, changed[1:]),  # a drift resolved: news
        ]
        for shift, seen in steps:
            assert not run(store, weekly, seen, AT + shift).failed
    got = inbox.received
    assert [_subject(got, i) for i in range(len(got))] == [
        "[xce-drift] hpc-east: weekly digest, 8 new, 0 changed, 0 resolved; 8 findings open",
        "[xce-drift] hpc-east: 0 new, 1 changed, 0 resolved; 8 findings open",
        "[xce-drift] hpc-east: weekly digest, nothing new; 8 findings open",
        "[xce-drift] hpc-east: 0 new, 0 changed, 1 resolved; 7 findings open",
    ]
    news = _body(got, 1)
    assert "volume-dir/shared/alice" in news and "host/cn02" not in news  # only the news
    digest = _body(got, 2)
    assert "volume-dir/shared/alice" in digest and "host/cn02" in digest  # all that is open
    assert f"resolved  {findings[0].category}  {findings[0].entry}" in _body(got, 3)
    assert store.last_digest("hpc-east") == AT + 7 * DAY - timedelta(minutes=30)


def test_digest_never_sends_only_news(store: StateStore) -> None:
    inbox = Inbox("")
    findings = sample().findings
    with smtp_server(inbox) as port:
        for day in range(3):
            run(store, settings(port, "never"), findings, AT + day * 30 * DAY)
    assert len(inbox.received) == 1 and store.last_digest("hpc-east") is None


def _routes(port: int, **extra: Any) -> Notify:
    doc = settings(port).model_dump(by_alias=True)
    return Notify.model_validate({**doc, **extra})


def test_addresses_told_the_same_share_one_message(store: StateStore) -> None:
    """A route's owners who are concerned by the same drift get one message together; an
    address of two routes gets one message with both routes' drift."""
    inbox = Inbox("")
    with smtp_server(inbox) as port:
        notify = _routes(port, routes=[
            {"kind": "volume-dir", "to": ["storage@example.org", "fs-oncall@example.org"]},
            {"provider": "shared-fs", "to": ["storage@example.org"]},
            {"kind": "host", "to": ["ops@example.org"]}])
        run(store, notify, sample().findings, AT)
    got = {r.recipients: _body([r], 0) for r in inbox.received}
    assert set(got) == {("storage@example.org",), ("fs-oncall@example.org",),
                        ("ops@example.org",), ("admins@example.org",)}
    storage = got[("storage@example.org",)]
    assert "quota/shared/user/alice" in storage and "volume-dir/shared/bob" in storage
    assert "quota/shared/user/alice" not in got[("fs-oncall@example.org",)]
    assert "host/cn02" in got[("ops@example.org",)]
    assert "host/cn02" not in got[("admins@example.org",)]
    assert "counter/slots@host/cn09" in got[("admins@example.org",)]  # no route takes it
