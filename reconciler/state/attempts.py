"""Provisioning attempts: how often an instance entry was released and its host never joined
(P6), so the plan backs off instead of releasing it again at once (docs/plan.md,
"Provisioning backoff")."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from reconciler.plan.attempts import ProvisionAttempts
from reconciler.state.connection import Connection, reconnecting
from reconciler.state.dialect import Row
from reconciler.state.times import to_time

_ATTEMPT_COLUMNS = "entry_id, failures, failed_at, template, instance"


class Attempts(Connection):
    """Provisioning attempts, over the store's connection."""

    @reconnecting
    def provision_attempts(self, site: str) -> dict[str, ProvisionAttempts]:
        """The recorded attempts of ``site``'s instance entries, by entry id."""
        with self._transaction(write=False):
            rows = self._query(
                f"SELECT {_ATTEMPT_COLUMNS} FROM provision_attempts WHERE site = ?", site
            )
        return {row[0]: _to_attempts(row) for row in rows}

    @reconnecting
    def record_provision_failure(self, site: str, entry: str, *, failures: int, template: str,
                                 instance: str, at: datetime | None = None) -> ProvisionAttempts:
        """Record that attempt ``failures`` (a count the plan worked out) of ``entry`` failed
        when ``instance`` is released: its host never joined. The same ``instance`` recorded
        again changes nothing (the first time is kept). ``at`` defaults to the store's clock."""
        if failures < 1:
            raise ValueError(f"a recorded failure is attempt 1 or later, not {failures}")
        with self._write() as clock:
            # one upsert decides: the same release recorded again (a resumed apply, a
            # reconnect that runs this again) keeps the row as it is
            self._execute(
                f"INSERT INTO provision_attempts (site, {_ATTEMPT_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (site, entry_id) DO UPDATE SET "
                "failures = excluded.failures, failed_at = excluded.failed_at, "
                "template = excluded.template, instance = excluded.instance "
                "WHERE provision_attempts.instance <> excluded.instance",
                site, entry, failures, clock if at is None else at.timestamp(), template,
                instance,
            )
            rows = self._query(f"SELECT {_ATTEMPT_COLUMNS} FROM provision_attempts "
                               "WHERE site = ? AND entry_id = ?", site, entry)
        return _to_attempts(rows[0])

    def clear_provision_attempts(self, site: str, seen: Mapping[str, str]) -> int:
        """Forget the attempts of each entry (id -> the ``instance`` the plan saw recorded)
        whose host joined: only while the record is still the one seen, so a failure
        recorded since is kept. Returns how many records were forgotten."""
        rows = [(site, entry, instance) for entry, instance in sorted(seen.items())]
        return self._clear_attempts(rows) if rows else 0

    @reconnecting
    def _clear_attempts(self, rows: list[tuple[str, str, str]]) -> int:
        with self._write():
            return sum(self._execute("DELETE FROM provision_attempts WHERE site = ? AND "
                                     "entry_id = ? AND instance = ?", *row) for row in rows)


def _to_attempts(row: Row) -> ProvisionAttempts:
    entry, failures, failed_at, template, instance = row
    return ProvisionAttempts(entry, int(failures), to_time(failed_at), template, instance)
