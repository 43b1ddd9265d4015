"""What each provider reported at the last trusted read, and what applies removed since:
what the shrink guard reads from the store (docs/plan.md, "An inventory that shrank"; table
``inventory_counts``, schema version 9).

Only counts are kept (per site, provider and kind), never ids: a million hosts cost one
row. The removals since come from the apply journal, so an apply's own deletes never look
like a loss to the next plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from reconciler.state.connection import Connection, reconnecting
from reconciler.state.times import to_time


@dataclass(frozen=True, slots=True)
class InventoryCounts:
    """One provider's entries per kind at the last trusted read, and when it was."""

    recorded: datetime
    kinds: Mapping[str, int] = field(default_factory=dict)


class Inventories(Connection):
    """Inventory counts and the journal's removals, over the store's connection."""

    @reconnecting
    def inventory_counts(self, site: str) -> dict[str, InventoryCounts]:
        """Per provider of ``site``: its entries per kind at the last trusted read."""
        with self._transaction(write=False):
            rows = self._query("SELECT provider, kind, entries, recorded FROM inventory_counts "
                               "WHERE site = ?", site)
        found: dict[str, tuple[float, dict[str, int]]] = {}
        for provider, kind, entries, recorded in rows:
            _, kinds = found.setdefault(provider, (float(recorded), {}))
            kinds[kind] = int(entries)
        return {p: InventoryCounts(to_time(at), kinds) for p, (at, kinds) in sorted(found.items())}

    @reconnecting
    def record_inventory_counts(self, site: str,
                                counts: Mapping[str, Mapping[str, int]]) -> None:
        """Each named provider's entries per kind now (the store's clock), replacing its last
        (a kind it no longer holds goes)."""
        if not counts:
            return
        with self._write() as now:
            for provider, kinds in sorted(counts.items()):
                self._execute("DELETE FROM inventory_counts WHERE site = ? AND provider = ?",
                              site, provider)
                self._execute_many(
                    "INSERT INTO inventory_counts (site, provider, kind, entries, recorded) "
                    "VALUES (?, ?, ?, ?, ?)",
                    [(site, provider, kind, int(n), now) for kind, n in sorted(kinds.items())])

    @reconnecting
    def done_since(self, run_prefix: str, actions: Sequence[str],
                   since: datetime) -> list[tuple[str, str]]:
        """(provider, entry id) of the journal's ops done with one of ``actions`` from
        ``since`` on, by runs whose id starts with ``run_prefix``."""
        if not actions:
            return []
        marks = ", ".join("?" * len(actions))
        with self._transaction(write=False):
            rows = self._query(
                "SELECT provider, entry_id FROM journal WHERE status = 'done' AND finished >= ? "
                f"AND action IN ({marks}) AND substr(run_id, 1, ?) = ?",
                since.timestamp(), *actions, len(run_prefix), run_prefix)
        return [(str(p), str(e)) for p, e in rows]
