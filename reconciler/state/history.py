"""A site's history: what was last applied, the plans recorded for review, past drift runs.

What was applied lets the next plan tell what is new; a plan recorded for review
(``xce-plan --record``) is what ``xce-apply`` may apply without a fresh plan (docs/apply.md,
"Reviewed plans"); the drift history is what each drift run counted (its rows are written
with the drift ledger, ``ledger.py``).
"""

from __future__ import annotations

import orjson

from reconciler.state.connection import Connection, reconnecting
from reconciler.state.dialect import Row
from reconciler.state.store import Applied, DriftRecord, RecordedPlan, ReviewStatus
from reconciler.state.times import to_maybe_time, to_time

_REVIEW_COLUMNS = (
    "site, desired_digest, git_commit, recorded_at, status, applied_at, applied_commit, branch"
)


class History(Connection):
    """Applied configurations, reviewed plans and drift history, over the store's connection."""

    # -- applied configurations --------------------------------------------------------

    @reconnecting
    def set_applied(self, site: str, digest: str, revision: str | None) -> Applied:
        with self._write() as now:
            self._execute(
                "INSERT INTO applied (site, digest, revision, applied) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (site) DO UPDATE SET digest = excluded.digest, "
                "revision = excluded.revision, applied = excluded.applied",
                site,
                digest,
                revision,
                now,
            )
        return Applied(site, digest, revision, to_time(now))

    @reconnecting
    def get_applied(self, site: str) -> Applied | None:
        with self._transaction(write=False):
            rows = self._query(
                "SELECT site, digest, revision, applied FROM applied WHERE site = ?", site
            )
        if not rows:
            return None
        site, digest, revision, applied = rows[0]
        return Applied(site, digest, revision, to_time(applied))

    # -- drift history -----------------------------------------------------------------

    @reconnecting
    def drift_history(self, site: str, limit: int = 50) -> list[DriftRecord]:
        """Most recent first."""
        with self._transaction(write=False):
            rows = self._query(
                "SELECT site, at, counts FROM drift_history WHERE site = ? "
                "ORDER BY at DESC, id DESC LIMIT ?",
                site,
                limit,
            )
        return [DriftRecord(s, to_time(at), orjson.loads(counts)) for s, at, counts in rows]

    # -- plans recorded for review -----------------------------------------------------

    @reconnecting
    def record_plan(self, site: str, desired_digest: str, commit: str,
                    plan: bytes, branch: str = "") -> RecordedPlan:
        """Keep ``plan`` (the plan file's bytes) as pending for review; the same key
        recorded again replaces the plan, pending again. In the same transaction the other
        pending plans of ``site`` recorded for ``branch`` (when not ``""``) are superseded:
        a second push to a pull request leaves one plan to review."""
        with self._write() as now:
            self._execute(
                f"INSERT INTO reviewed_plans ({_REVIEW_COLUMNS}, plan) "
                "VALUES (?, ?, ?, ?, 'pending', NULL, NULL, ?, ?) "
                "ON CONFLICT (site, desired_digest, git_commit) DO UPDATE SET "
                "recorded_at = excluded.recorded_at, plan = excluded.plan, status = 'pending', "
                "applied_at = NULL, applied_commit = NULL, branch = excluded.branch",
                site, desired_digest, commit, now, branch, plan,
            )
            superseded = 0 if not branch else self._execute(
                "UPDATE reviewed_plans SET status = 'superseded' WHERE site = ? AND branch = ? "
                "AND status = 'pending' AND NOT (desired_digest = ? AND git_commit = ?)",
                site, branch, desired_digest, commit,
            )
        return RecordedPlan(site, desired_digest, commit, to_time(now), ReviewStatus.PENDING,
                            branch=branch, superseded=superseded)

    @reconnecting
    def pending_plan(self, site: str,
                     desired_digest: str) -> tuple[RecordedPlan, bytes] | None:
        """The newest pending plan of ``site`` for ``desired_digest``, with its bytes."""
        with self._transaction(write=False):
            rows = self._query(
                f"SELECT {_REVIEW_COLUMNS}, plan FROM reviewed_plans WHERE site = ? AND "
                "desired_digest = ? AND status = 'pending' "
                "ORDER BY recorded_at DESC, git_commit LIMIT 1",
                site, desired_digest,
            )
        return (_to_review(rows[0]), bytes(rows[0][-1])) if rows else None

    @reconnecting
    def pending_plans(self, site: str, limit: int = 20) -> list[RecordedPlan]:
        """The pending plans of ``site``, newest first (what a refusal lists)."""
        with self._transaction(write=False):
            rows = self._query(
                f"SELECT {_REVIEW_COLUMNS} FROM reviewed_plans WHERE site = ? AND "
                "status = 'pending' ORDER BY recorded_at DESC, git_commit LIMIT ?",
                site, limit,
            )
        return [_to_review(row) for row in rows]

    @reconnecting
    def mark_plan_applied(self, site: str, desired_digest: str, commit: str,
                          applied_commit: str) -> RecordedPlan:
        """Mark that plan applied (at ``applied_commit``); the other pending plans of the
        same site and digest become superseded. LookupError when it is not recorded."""
        key = (site, desired_digest, commit)
        with self._write() as now:
            if not self._execute(
                "UPDATE reviewed_plans SET status = 'applied', applied_at = ?, "
                "applied_commit = ? WHERE site = ? AND desired_digest = ? AND git_commit = ?",
                now, applied_commit, *key,
            ):
                raise LookupError(f"no plan recorded for review for {key!r}")
            self._execute(
                "UPDATE reviewed_plans SET status = 'superseded' WHERE site = ? AND "
                "desired_digest = ? AND git_commit <> ? AND status = 'pending'",
                *key,
            )
            rows = self._query(f"SELECT {_REVIEW_COLUMNS} FROM reviewed_plans WHERE site = ? "
                               "AND desired_digest = ? AND git_commit = ?", *key)
        return _to_review(rows[0])


def _to_review(row: Row) -> RecordedPlan:
    site, digest, commit, recorded, status, applied_at, applied_commit, branch = row[:8]
    return RecordedPlan(site, digest, commit, to_time(recorded), ReviewStatus(status),
                        to_maybe_time(applied_at), applied_commit, branch)
