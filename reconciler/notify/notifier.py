"""``xce-drift --notify``: mail what is new, changed or resolved since the last
notification, once, to whom each drift concerns (docs/drift.md, "Email").

After the run is recorded, the site's news is claimed from the drift ledger under a lease
(``claim_notifications``: a concurrent run sees the lease and sends nothing), the
messages are sent, and what went is marked notified in one transaction
(``mark_notified``). A failed send marks nothing of what did not go, so the next run
sends it; two runs with the same drift send one message. When the site's ``digest``
period has passed since the last digest, the message lists all open drift, news or not.

Routing: a drift that a route of ``drift.notify.routes`` takes (by kind, by provider)
goes to that route's addresses, any other drift to ``drift.notify.to``. Each address gets
one message with what concerns it; addresses concerned by the same drift share one.

It prints nothing: a run returns a ``Notice`` of what it did, which the command shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path

from compiler.contract.drift import DIGEST_DAYS, CompiledDrift, MailRoute, Notify
from compiler.core.problems import Problem, UserError
from reconciler.drift.model import Changed, DriftReport, Finding, SinceLast
from reconciler.notify.email import (
    HINTS,
    NO_SETTINGS,
    Mail,
    SendFailed,
    address,
    busy,
    compose,
    send,
    subject,
    write_eml,
)
from reconciler.render.drift import Shown, Templates
from reconciler.state import StateStore
from reconciler.state.errors import LockHeld, LockLost
from reconciler.state.holder import current_holder
from reconciler.state.store import DriftEntry, DriftPending

LEASE = 300.0  # seconds the notification lease lasts, plus ten SMTP timeouts
DIGEST_SLACK = timedelta(hours=1)  # a nightly job a little early still sends the weekly digest


@dataclass(frozen=True, slots=True)
class Notice:
    """What notifying did: the lines that say so (for the command to print; not compared:
    two notices that did the same are equal), the problems, and whether it failed (the
    command's exit code)."""

    said: tuple[str, ...] = field(default=(), compare=False)
    problems: tuple[Problem, ...] = ()
    failed: bool = False


@dataclass(frozen=True, slots=True)
class _News:
    """One piece of news as the ledger has it: its fingerprints and its finding."""

    what: str  # new, changed, resolved
    fingerprints: tuple[str, ...]
    finding: Finding
    before: Finding | None = None  # a changed drift, as notified


def _news(pending: DriftPending) -> list[_News]:
    def found(e: DriftEntry) -> Finding:
        return replace(Finding.from_json(e.detail), since=e.first_seen)

    out = [_News("new", (e.fingerprint,), found(e)) for e in pending.new]
    out += [_News("changed", (b.fingerprint, a.fingerprint), found(a), found(b))
            for b, a in pending.changed]
    out += [_News("resolved", (e.fingerprint,), found(e)) for e in pending.resolved]
    return out


def _taken(route: MailRoute, finding: Finding) -> bool:
    return ((route.kind is None or route.kind == finding.kind)
            and (route.provider is None or route.provider == finding.provider))


def recipients(notify: Notify, finding: Finding) -> tuple[str, ...]:
    """The addresses ``finding`` goes to: its routes' (in order), else the default list."""
    routed = [to for r in notify.routes or () if _taken(r, finding) for to in r.to]
    return tuple(dict.fromkeys(routed or notify.to))


@dataclass(frozen=True, slots=True)
class _Share:
    """What one group of addresses is told."""

    news: tuple[_News, ...]
    open: tuple[Finding, ...]
    ignored: tuple[Finding, ...]

    def report(self, report: DriftReport, last: datetime | None, digest: bool) -> DriftReport:
        """The report as this group reads it: its news, and its open drift in a digest
        (else only the drift that is news)."""
        by = {w: tuple(n for n in self.news if n.what == w) for w in ("new", "changed", "resolved")}
        since = SinceLast(
            new=tuple(n.finding for n in by["new"]),
            changed=tuple(Changed(n.before or n.finding, n.finding) for n in by["changed"]),
            resolved=tuple(n.finding for n in by["resolved"]), last_notified=last)
        shown = self.open if digest else (*since.new, *(c.after for c in since.changed))
        return replace(report, findings=tuple(shown), ignored=self.ignored, since_last=since)


def _shares(notify: Notify, report: DriftReport, news: Sequence[_News],
            digest: bool) -> dict[tuple[str, ...], _Share]:
    """Addresses grouped by what they are told; an address with nothing to tell is left out."""
    sides = (tuple(n.finding for n in news), report.findings, report.ignored)
    told: dict[str, tuple[set[int], set[int], set[int]]] = {}
    for side, findings in enumerate(sides):
        for i, f in enumerate(findings):
            for a in recipients(notify, f):
                told.setdefault(a, (set(), set(), set()))[side].add(i)
    groups: dict[tuple[frozenset[int], ...], list[str]] = {}
    for a, (new, opened, ignored) in told.items():
        if new or (digest and opened):
            groups.setdefault((frozenset(new), frozenset(opened), frozenset(ignored)), []).append(a)
    return {tuple(addrs): _Share(tuple(news[i] for i in sorted(new)),
                                 tuple(report.findings[i] for i in sorted(opened)),
                                 tuple(report.ignored[i] for i in sorted(ignored)))
            for (new, opened, ignored), addrs in groups.items()}


def digest_due(notify: Notify, last: datetime | None, at: datetime) -> bool:
    days = DIGEST_DAYS[notify.digest]
    if days is None:
        return False
    return last is None or at - last >= timedelta(days=days) - DIGEST_SLACK


def mails(notify: Notify, report: DriftReport, pending: DriftPending, templates: Templates,
          digest: bool) -> list[Mail]:
    """The messages to send for ``pending`` (and all open drift, when ``digest``)."""
    out = []
    for to, share in _shares(notify, report, _news(pending), digest).items():
        mine = share.report(report, pending.last_notified, digest)
        title = subject(mine, len(share.open), notify.digest if digest else None)
        prints = frozenset(p for n in share.news for p in n.fingerprints)
        out.append(Mail(compose(Shown(mine, templates), notify, to, title),
                        tuple(address(a) for a in to), prints))
    return out


@dataclass(frozen=True, slots=True)
class Notifier:
    """``--notify`` (and ``--dry-run DIR``) for one run; ``settings`` None: not asked to."""

    settings: Notify | None = None
    dry_run: Path | None = None

    @classmethod
    def of(cls, drift: CompiledDrift, dry_run: Path | None = None) -> Notifier:
        """The site's notifier (``dry_run``: the folder the messages are written to instead);
        a site without drift.notify settings is refused, before anything is gathered."""
        if drift.notify is None:
            raise UserError([HINTS.problem(NO_SETTINGS, "--notify: the site has no "
                                           "drift.notify settings")])
        return cls(drift.notify, dry_run)

    def run(self, report: DriftReport, templates: Templates, store: StateStore | None,
            at: datetime) -> Notice:
        """Notify ``report``'s news (the run is recorded in ``store`` already)."""
        if self.settings is None or store is None:
            return Notice()
        mailer = _Mailer(self.settings, report, templates, store, at)
        return mailer.dry_run(self.dry_run) if self.dry_run is not None else mailer.send()


@dataclass(frozen=True, slots=True)
class _Mailer:
    """One run's notification of ``report``."""

    settings: Notify
    report: DriftReport
    templates: Templates
    store: StateStore
    at: datetime

    def _mails(self, pending: DriftPending) -> tuple[list[Mail], bool]:
        """The messages for ``pending``, and whether they are a digest."""
        digest = digest_due(self.settings, self.store.last_digest(self.report.site), self.at)
        return mails(self.settings, self.report, pending, self.templates, digest), digest

    def dry_run(self, folder: Path) -> Notice:
        out, _ = self._mails(self.store.pending_notifications(self.report.site))
        paths = write_eml(folder, out, self.report.site, self.at)
        if not paths:
            return Notice((_NOTHING,))
        return Notice((f"Wrote {len(paths)} message(s) to {folder}/ instead of sending them "
                       "(--dry-run; nothing is marked notified)",
                       *(f"  {path}" for path in paths)))

    def send(self) -> Notice:
        """Claim the news under the lease, send, and mark what went; a concurrent run that
        holds the lease is left to send it."""
        site, holder = self.report.site, current_holder()
        try:
            pending = self.store.claim_notifications(site, holder,
                                                     LEASE + 10 * self.settings.smtp.timeout)
        except LockHeld as held:
            return Notice(problems=(busy(site, held.lock.holder),))
        try:
            return self._send(pending, holder.name)
        except BaseException:
            self.store.release_notifications(site, holder.name)
            raise

    def _send(self, pending: DriftPending, holder: str) -> Notice:
        """Mark what went (only that, and the digest only when all went); with nothing
        sent, give the lease back."""
        site = self.report.site
        out, digest = self._mails(pending)
        problems: list[Problem] = []
        sent = out
        if out:
            try:
                send(self.settings, out)
            except SendFailed as err:
                problems.append(err.problem)
                sent = out[:err.sent]
        if not sent:
            self.store.release_notifications(site, holder)
            said = "Sent no message: nothing is marked notified" if problems else _NOTHING
            return Notice((said,), tuple(problems), failed=bool(problems))
        unsent = {p for m in out[len(sent):] for p in m.fingerprints}
        told = {p for m in sent for p in m.fingerprints} - unsent
        try:
            self.store.mark_notified(site, told, self.at, holder=holder,
                                     digest=digest and not problems)
        except LockLost as lost:  # sent, but the run that took the lease over sends it again
            return Notice(problems=(*lost.problems, *problems), failed=True)
        said = (f"Sent {len(sent)} message(s) through {self.settings.smtp.address}: "
                + "; ".join(f"to {', '.join(m.recipients)}" for m in sent))
        return Notice((said,), tuple(problems), failed=bool(problems))


_NOTHING = "Nothing new since the last notification, and no digest due: no message sent"
