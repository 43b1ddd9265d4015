"""What each provider reported at the last trusted read, and what applies removed since:
the statements ``SqlStore`` runs for the shrink guard (docs/plan.md, "An inventory that
shrank"; table ``inventory_counts``, schema version 9).

Only counts are kept (per site, provider and kind), never ids: a million hosts cost one
row. The removals since come from the apply journal, so an apply's own deletes never look
like a loss to the next plan.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from reconciler.state.dialect import Row
from reconciler.state.times import to_time


@dataclass(frozen=True, slots=True)
class InventoryCounts:
    """One provider's entries per kind at the last trusted read, and when it was."""

    recorded: datetime
    kinds: Mapping[str, int] = field(default_factory=dict)


class Statements(Protocol):
    """What these need of ``SqlStore``: its statements, in the open transaction."""

    def _query(self, sql: str, *params: Any) -> list[Row]: ...

    def _execute(self, sql: str, *params: Any) -> int: ...

    def _execute_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...


def read(db: Statements, site: str) -> dict[str, InventoryCounts]:
    rows = db._query("SELECT provider, kind, entries, recorded FROM inventory_counts "
                     "WHERE site = ?", site)
    found: dict[str, tuple[float, dict[str, int]]] = {}
    for provider, kind, entries, recorded in rows:
        _, kinds = found.setdefault(provider, (float(recorded), {}))
        kinds[kind] = int(entries)
    return {p: InventoryCounts(to_time(at), kinds) for p, (at, kinds) in sorted(found.items())}


def write(db: Statements, site: str, counts: Mapping[str, Mapping[str, int]],
          now: float) -> None:
    """Each named provider's counts replace its earlier ones (a kind it no longer holds goes)."""
    for provider, kinds in sorted(counts.items()):
        db._execute("DELETE FROM inventory_counts WHERE site = ? AND provider = ?",
                    site, provider)
        db._execute_many(
            "INSERT INTO inventory_counts (site, provider, kind, entries, recorded) "
            "VALUES (?, ?, ?, ?, ?)",
            [(site, provider, kind, int(n), now) for kind, n in sorted(kinds.items())])


def done_since(db: Statements, run_prefix: str, actions: Sequence[str],
               since: datetime) -> list[tuple[str, str]]:
    """(provider, entry id) of every op with one of ``actions`` that runs whose id starts
    with ``run_prefix`` finished from ``since`` on."""
    if not actions:
        return []
    marks = ", ".join("?" * len(actions))
    return [(str(p), str(e)) for p, e in db._query(
        "SELECT provider, entry_id FROM journal WHERE status = 'done' AND finished >= ? "
        f"AND action IN ({marks}) AND substr(run_id, 1, ?) = ?",
        since.timestamp(), *actions, len(run_prefix), run_prefix)]
