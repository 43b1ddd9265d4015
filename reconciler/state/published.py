"""Published inventories (issue 24): each proxied provider's inventory as its active proxy
last read it, so xce-plan / xce-apply / xce-drift read it from the store instead of calling.

A header row per provider (generation, session, info, when, how many entries, under which
configuration, or the error of the last read) and one row per entry (its JSON text). A proxy
publishes a delta (the entries that changed, the ids gone) or, as a new holder, one full
replace; either is one transaction, fenced by its lease. The entries go in with one
``executemany`` per statement, so hundreds of thousands are replaced in seconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from reconciler.state.connection import reconnecting
from reconciler.state.dialect import Row
from reconciler.state.provider_leases import ProviderLeases
from reconciler.state.proxy_records import PublishedHeader

_HEADER_COLUMNS = ("site, provider, proxy, epoch, generation, complete, session, info, "
                   "published, entry_count, config_seq, error, changed")


class PublishedInventories(ProviderLeases):
    """Published inventories, over the store's connection (fenced by the provider leases)."""

    @reconnecting
    def publish_inventory(
        self, site: str, provider: str, instance: str, epoch: int, *, generation: int,
        complete: bool, session: dict[str, Any] | None, info: dict[str, Any] | None,
        config_seq: int, upserts: Sequence[tuple[str, str]], deletes: Sequence[str],
        replace: bool,
    ) -> PublishedHeader:
        """Publish what ``provider`` answered: ``upserts`` (entry id, entry doc JSON text) and
        ``deletes`` (ids gone) applied to the rows published before, or to none when
        ``replace``. Raises ``LeaseLost`` (writing nothing) unless ``instance`` holds the
        provider's lease under ``epoch``."""
        with self._write() as now:
            self._fence(site, provider, instance, epoch, now)
            if replace:
                self._execute("DELETE FROM published_entries WHERE site = ? AND provider = ?",
                              site, provider)
            elif deletes:
                self._execute_many("DELETE FROM published_entries WHERE site = ? AND "
                                   "provider = ? AND entry_id = ?",
                                   [(site, provider, entry) for entry in deletes])
            if upserts:
                self._execute_many(
                    "INSERT INTO published_entries (site, provider, entry_id, doc) "
                    "VALUES (?, ?, ?, ?) ON CONFLICT (site, provider, entry_id) "
                    "DO UPDATE SET doc = excluded.doc",
                    [(site, provider, entry, doc) for entry, doc in upserts],
                )
            count = int(self._query("SELECT count(*) FROM published_entries WHERE site = ? "
                                    "AND provider = ?", site, provider)[0][0])
            self._put_header(site, provider, instance, epoch, now, (
                str(generation), int(complete), _text(session), _text(info), count, config_seq,
                None))
            return self._written(site, provider)

    @reconnecting
    def publish_error(self, site: str, provider: str, instance: str, epoch: int, *,
                      error: str, config_seq: int) -> PublishedHeader:
        """Publish that reading ``provider`` failed (``error`` says why): its entries stay as
        last published, but the header marks them unknown. Fenced as ``publish_inventory``."""
        with self._write() as now:
            self._fence(site, provider, instance, epoch, now)
            self._put_header(site, provider, instance, epoch, now,
                             (None, 0, None, None, 0, config_seq, error), keep=True)
            return self._written(site, provider)

    def _put_header(self, site: str, provider: str, instance: str, epoch: int, now: float,
                    fields: tuple[Any, ...], keep: bool = False) -> None:
        """Write the header; ``fields``: generation .. error. ``keep``: an error only, so an
        existing header keeps what was last read."""
        read = ("" if keep else "generation = excluded.generation, complete = "
                "excluded.complete, session = excluded.session, info = excluded.info, "
                "entry_count = excluded.entry_count, ")
        proxy = self._query("SELECT holder FROM provider_leases WHERE site = ? AND "
                            "provider = ?", site, provider)[0][0]
        self._execute(
            "INSERT INTO published_inventories (site, provider, proxy, instance, epoch, "
            "generation, complete, session, info, entry_count, config_seq, error, published) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (site, provider) "
            f"DO UPDATE SET {read}proxy = excluded.proxy, instance = excluded.instance, "
            "epoch = excluded.epoch, config_seq = excluded.config_seq, "
            "error = excluded.error, published = excluded.published, changed = NULL",
            site, provider, proxy, instance, epoch, *fields, now,
        )

    @reconnecting
    def published_header(self, site: str, provider: str) -> PublishedHeader | None:
        """What ``provider``'s inventory was last published as; None if never."""
        with self._transaction(write=False):
            return self._header(site, provider)

    @reconnecting
    def published_headers(self, site: str) -> dict[str, PublishedHeader]:
        """Every provider of ``site`` published so far, by provider."""
        with self._transaction(write=False):
            rows = self._query(f"SELECT {_HEADER_COLUMNS} FROM published_inventories "
                               "WHERE site = ? ORDER BY provider", site)
        return {header.provider: header for header in map(_to_header, rows)}

    @reconnecting
    def published_entries(self, site: str, provider: str) -> list[str]:
        """The entry docs' JSON text as published for ``provider``, by entry id."""
        with self._transaction(write=False):
            rows = self._query("SELECT doc FROM published_entries WHERE site = ? AND "
                               "provider = ? ORDER BY entry_id", site, provider)
        return [str(row[0]) for row in rows]

    @reconnecting
    def store_now(self) -> float:
        """The store's clock (epoch seconds): what published times and lease ends are on."""
        with self._transaction(write=False):
            return self._clock()

    def _header(self, site: str, provider: str) -> PublishedHeader | None:
        rows = self._query(f"SELECT {_HEADER_COLUMNS} FROM published_inventories "
                           "WHERE site = ? AND provider = ?", site, provider)
        return _to_header(rows[0]) if rows else None

    def _written(self, site: str, provider: str) -> PublishedHeader:
        """The header just written in this transaction."""
        header = self._header(site, provider)
        assert header is not None
        return header


def _text(doc: dict[str, Any] | None) -> str | None:
    return None if doc is None else orjson.dumps(doc).decode()


def _to_header(row: Row) -> PublishedHeader:
    (site, provider, proxy, epoch, generation, complete, session, info, published,
     entry_count, config_seq, error, changed) = row
    return PublishedHeader(
        site, provider, proxy, int(epoch), None if generation is None else int(generation),
        bool(complete), None if session is None else orjson.loads(session),
        None if info is None else orjson.loads(info), float(published), int(entry_count),
        int(config_seq), error, None if changed is None else float(changed),
    )
