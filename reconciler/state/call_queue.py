"""The call queue (issue 24): the change calls an apply makes to a proxied provider, queued
in the store for the proxy that holds the provider's lease, and their replies.

An op id is queued once per provider: queued again while it waits or runs, it stays as it
is; once done, a success is answered from its reply and a failure is queued anew (the
apply tries it again). A proxy takes the calls of the providers it holds, and those taken
under an older epoch (their holder died mid-call: the provider's op ledger deduplicates the
redo, which carries the same op id); taking and finishing are fenced by its lease.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any

import orjson

from reconciler.state.connection import reconnecting
from reconciler.state.dialect import Row
from reconciler.state.provider_leases import ProviderLeases
from reconciler.state.proxy_records import QueuedCall

_CHUNK = 500  # ids per IN (…) list: well under either database's limit on parameters


class CallQueue(ProviderLeases):
    """The call queue, over the store's connection (fenced by the provider leases)."""

    @reconnecting
    def enqueue_calls(self, site: str, provider: str,
                      calls: Sequence[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
        """Queue ``calls`` (op id, ``Request.to_json()`` doc) for ``provider``; op id -> reply
        doc of those already done successfully, which are not queued again."""
        if not calls:
            return {}
        with self._write() as now:
            self._execute_many(
                "INSERT INTO proxy_calls (site, provider, op_id, request, status, queued) "
                "VALUES (?, ?, ?, ?, 'queued', ?) ON CONFLICT (site, provider, op_id) "
                "DO UPDATE SET request = excluded.request, status = 'queued', "
                "queued = excluded.queued, taken_by = NULL, taken_epoch = NULL, taken = NULL, "
                "reply = NULL, ok = NULL, done = NULL "
                "WHERE proxy_calls.status = 'done' AND proxy_calls.ok = 0",
                [(site, provider, op_id, orjson.dumps(request).decode(), now)
                 for op_id, request in calls],
            )
            return self._replies(site, provider, [op_id for op_id, _ in calls], " AND ok = 1")

    @reconnecting
    def call_replies(self, site: str, provider: str,
                     op_ids: Collection[str]) -> dict[str, dict[str, Any]]:
        """The replies written so far to these calls of ``provider``, by op id."""
        with self._transaction(write=False):
            return self._replies(site, provider, sorted(op_ids), "")

    def _replies(self, site: str, provider: str, op_ids: Sequence[str],
                 only: str) -> dict[str, dict[str, Any]]:
        replies: dict[str, dict[str, Any]] = {}
        for chunk in _chunks(op_ids):
            rows = self._query(
                "SELECT op_id, reply FROM proxy_calls WHERE site = ? AND provider = ? AND "
                f"status = 'done'{only} AND op_id IN ({', '.join('?' * len(chunk))})",
                site, provider, *chunk,
            )
            replies.update((op_id, orjson.loads(reply)) for op_id, reply in rows)
        return replies

    @reconnecting
    def withdraw_calls(self, site: str, provider: str, op_ids: Collection[str]) -> set[str]:
        """Take back the calls of ``op_ids`` that no proxy has taken yet; the op ids withdrawn.
        Such a call was never made, so its caller may say so (not in doubt); one taken in the
        meantime stays, as the proxy may be making it."""
        withdrawn: set[str] = set()
        with self._write():
            for chunk in _chunks(sorted(op_ids)):
                where = (f"site = ? AND provider = ? AND status = 'queued' AND op_id IN "
                         f"({', '.join('?' * len(chunk))})")
                rows = self._query(f"SELECT op_id FROM proxy_calls WHERE {where}",
                                   site, provider, *chunk)
                self._execute(f"DELETE FROM proxy_calls WHERE {where}", site, provider, *chunk)
                withdrawn.update(str(row[0]) for row in rows)
        return withdrawn

    @reconnecting
    def take_calls(self, site: str, instance: str, held: Mapping[str, int],
                   limit: int) -> list[QueuedCall]:
        """Take up to ``limit`` calls, oldest first, of the providers ``instance`` holds
        (``held``: provider -> its epoch): those queued, those taken under an older epoch,
        and those ``instance`` took under this epoch and has not finished. The last make a
        retry safe: should the COMMIT be cut off yet go through, the run again returns the
        calls it took (the caller skips the ones it still holds answers for). A provider
        whose lease is no longer held so (lapsed, or another's) is skipped, its calls left
        for the holder."""
        with self._write() as now:
            mine = [(p, e) for p, e in sorted(held.items())
                    if self._held_by(site, p, instance, e, now)]
            rows: list[Row] = []
            for provider, epoch in mine:
                rows += self._query(
                    "SELECT call_id, site, provider, op_id, request, queued FROM proxy_calls "
                    "WHERE site = ? AND provider = ? AND (status = 'queued' OR "
                    "(status = 'taken' AND (taken_epoch < ? OR (taken_epoch = ? AND "
                    "taken_by = ?)))) ORDER BY call_id LIMIT ?",
                    site, provider, epoch, epoch, instance, limit,
                )
            rows = sorted(rows)[:limit]
            epochs = dict(mine)
            self._execute_many(
                "UPDATE proxy_calls SET status = 'taken', taken_by = ?, taken_epoch = ?, "
                "taken = ? WHERE call_id = ?",
                [(instance, epochs[row[2]], now, row[0]) for row in rows],
            )
        return [QueuedCall(int(call_id), s, p, op_id, orjson.loads(request), float(queued))
                for call_id, s, p, op_id, request, queued in rows]

    @reconnecting
    def finish_call(self, site: str, call_id: int, instance: str, epoch: int,
                    reply: dict[str, Any], *, changed: bool = False) -> None:
        """Write the reply (a ``Reply.to_json()`` doc) to a call ``instance`` took. Raises
        ``LeaseLost`` (writing nothing) unless it still holds the call's provider under
        ``epoch`` and the call is still its own. ``changed``: the call may have changed
        the provider, so its published inventory is marked behind (in the same
        transaction) until the proxy publishes again."""
        with self._write() as now:
            rows = self._query("SELECT provider FROM proxy_calls WHERE site = ? AND "
                               "call_id = ?", site, call_id)
            if not rows:
                raise ValueError(f"no call {call_id} queued for site {site!r}")
            self._write_replies(site, str(rows[0][0]), instance, epoch, [(call_id, reply, changed)],
                         now)

    @reconnecting
    def finish_calls(self, site: str, provider: str, instance: str, epoch: int,
                     replies: Sequence[tuple[int, dict[str, Any], bool]]) -> None:
        """``finish_call`` for a batch of one provider's calls (call id, reply, changed), in
        one transaction: all are written, or none (``LeaseLost``)."""
        with self._write() as now:
            self._write_replies(site, provider, instance, epoch, replies, now)

    def _write_replies(self, site: str, provider: str, instance: str, epoch: int,
                replies: Sequence[tuple[int, dict[str, Any], bool]], now: float) -> None:
        self._fence(site, provider, instance, epoch, now)
        self._execute_many(
            "UPDATE proxy_calls SET status = 'done', reply = ?, ok = ?, done = ? "
            "WHERE call_id = ? AND provider = ? AND taken_by = ? AND taken_epoch = ?",
            [(orjson.dumps(reply).decode(), int(reply.get("ok") is True), now, call_id,
              provider, instance, epoch) for call_id, reply, _ in replies],
        )
        if any(changed for _, _, changed in replies):
            self._execute("UPDATE published_inventories SET changed = ? WHERE site = ? "
                          "AND provider = ? AND changed IS NULL", now, site, provider)

    @reconnecting
    def queue_depth(self, site: str) -> dict[str, int]:
        """How many calls wait or run per provider of ``site`` (queued or taken)."""
        with self._transaction(write=False):
            rows = self._query("SELECT provider, count(*) FROM proxy_calls WHERE site = ? AND "
                               "status IN ('queued', 'taken') GROUP BY provider "
                               "ORDER BY provider", site)
        return {str(provider): int(count) for provider, count in rows}


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start:start + _CHUNK]
