"""The drift ledger: every drift a site's runs saw, until it is resolved and told.

A row is one drift (its fingerprint) that is open, or resolved and not yet notified. A
recorded run first bumps its site's run number in ``drift_sites`` — on PostgreSQL that
row lock serialises the runs of one site, on SQLite ``BEGIN IMMEDIATE`` already does —
then upserts what it saw under that number and resolves the open rows an earlier number
saw. A resolved drift nobody was told about is simply forgotten, and so is one whose
resolution was notified: what is left is exactly what is open or still to tell, so the
table stays as small as the drift itself. Telling it is ``notifications.py``'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

import orjson

from compiler.core.canonical import dumps_compact
from reconciler.state.connection import Connection, reconnecting
from reconciler.state.dialect import Row
from reconciler.state.store import DriftEntry, DriftPending, DriftRecord, DriftSeen
from reconciler.state.times import to_maybe_time, to_time

_COLUMNS = "fingerprint, subject, detail, first_seen, last_seen, notified_at, resolved_at"


class Ledger(Connection):
    """The drift ledger's rows, over the store's connection (docs/drift.md, "The drift
    ledger")."""

    def record_drift(self, site: str, counts: Mapping[str, int], seen: Iterable[DriftSeen] = (),
                     *, at: datetime | None = None) -> DriftRecord:
        """Record a drift run: ``seen`` is every drift it found (new ones open, known ones
        seen again), and open drift it did not see is resolved. Runs of one site are
        serialised. ``at`` defaults to the store's clock."""
        # a tuple: run again after a reconnect, the transaction must see them all again
        return self._record_drift(site, dict(counts), tuple(seen), at)

    @reconnecting
    def _record_drift(self, site: str, counts: dict[str, int], seen: tuple[DriftSeen, ...],
                      at: datetime | None) -> DriftRecord:
        with self._write() as clock:
            now = clock if at is None else at.timestamp()
            self._record(site, counts, seen, now)
        return DriftRecord(site, to_time(now), counts)

    def _record(self, site: str, counts: Mapping[str, int], seen: Iterable[DriftSeen],
                now: float) -> None:
        """One run: its history row, every drift it saw, and the open drift it did not see."""
        self._execute(
            "INSERT INTO drift_sites (site, last_run) VALUES (?, 1) "
            "ON CONFLICT (site) DO UPDATE SET last_run = drift_sites.last_run + 1",
            site,
        )
        run = int(self._query("SELECT last_run FROM drift_sites WHERE site = ?", site)[0][0])
        self._execute("INSERT INTO drift_history (site, at, counts) VALUES (?, ?, ?)",
                      site, now, dumps_compact(dict(counts)).decode())
        unique = {s.fingerprint: s for s in seen}  # one row per drift, whatever the caller sent
        rows = [(site, s.fingerprint, s.subject, dumps_compact(dict(s.detail)).decode(), now,
                 now, run) for s in unique.values()]
        # Seen again: a resolved row is one whose resolution was not told yet, so the world
        # is again as notified (its notified_at stands).
        self._execute_many(
            "INSERT INTO drift_ledger (site, fingerprint, subject, detail, first_seen, "
            "last_seen, seen_run) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (site, fingerprint) "
            "DO UPDATE SET detail = excluded.detail, last_seen = excluded.last_seen, "
            "seen_run = excluded.seen_run, resolved_at = NULL",
            rows,
        )
        gone = "site = ? AND resolved_at IS NULL AND seen_run < ?"
        self._execute(f"DELETE FROM drift_ledger WHERE {gone} AND notified_at IS NULL",
                      site, run)
        self._execute(f"UPDATE drift_ledger SET resolved_at = ? WHERE {gone}", now, site, run)

    @reconnecting
    def open_drift(self, site: str) -> list[DriftEntry]:
        """Every open drift of ``site`` (for a digest), by subject."""
        with self._transaction(write=False):
            rows = self._query(f"SELECT {_COLUMNS} FROM drift_ledger WHERE site = ? AND "
                               "resolved_at IS NULL ORDER BY subject, fingerprint", site)
        return [_entry(row) for row in rows]

    def _pending(self, site: str) -> DriftPending:
        """Pairs a new drift with the notified one of the same subject it replaces: changed."""
        rows = self._query(
            f"SELECT {_COLUMNS} FROM drift_ledger WHERE site = ? AND "
            "(notified_at IS NULL OR resolved_at IS NOT NULL) ORDER BY subject, fingerprint",
            site)
        entries = [_entry(row) for row in rows]
        gone = {e.subject: e for e in entries if e.resolved_at is not None}
        new: list[DriftEntry] = []
        changed: list[tuple[DriftEntry, DriftEntry]] = []
        for e in entries:
            if e.resolved_at is None:
                before = gone.pop(e.subject, None)
                if before is None:
                    new.append(e)
                else:
                    changed.append((before, e))
        return DriftPending(tuple(new), tuple(changed), tuple(gone.values()),
                            self._told(site)[0])

    def _mark(self, site: str, fingerprints: Iterable[str], now: float, digest: bool) -> int:
        """Mark drift notified; a resolved one was told to be gone, so it is forgotten."""
        keys = [(site, fp) for fp in sorted(set(fingerprints))]
        marked = 0
        for key in keys:  # one statement each: the count of what was marked is the answer
            marked += self._execute(
                "UPDATE drift_ledger SET notified_at = ? WHERE site = ? AND fingerprint = ? "
                "AND resolved_at IS NULL AND notified_at IS NULL", now, *key)
        self._execute_many("DELETE FROM drift_ledger WHERE site = ? AND fingerprint = ? "
                           "AND resolved_at IS NOT NULL", keys)
        self._execute(
            "INSERT INTO drift_sites (site, last_run, last_notified, last_digest) "
            "VALUES (?, 0, ?, ?) ON CONFLICT (site) DO UPDATE SET "
            "last_notified = excluded.last_notified, "
            "last_digest = COALESCE(excluded.last_digest, drift_sites.last_digest)",
            site, now, now if digest else None)
        return marked

    def _told(self, site: str) -> tuple[datetime | None, datetime | None]:
        """When ``site``'s drift was last notified, and when a digest of it was last sent."""
        rows = self._query("SELECT last_notified, last_digest FROM drift_sites WHERE site = ?",
                           site)
        if not rows:
            return None, None
        notified, digested = rows[0]
        return to_maybe_time(notified), to_maybe_time(digested)


def _entry(row: Row) -> DriftEntry:
    fingerprint, subject, detail, first_seen, last_seen, notified_at, resolved_at = row
    return DriftEntry(fingerprint, subject, orjson.loads(detail), to_time(first_seen),
                      to_time(last_seen), to_maybe_time(notified_at), to_maybe_time(resolved_at))
