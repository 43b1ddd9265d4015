"""How many entries a supply map holds per provider and kind, counted in one pass.

The live map's shrink guard weighs these counts against the last trusted read, and a live
gather records them as the next one; a pass over half a million entries costs a tenth of
a second, so the map is counted once and its census handed to both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from operator import attrgetter

from compiler.contract.supply_map import Entry

_PROVIDER_KIND = attrgetter("provider", "kind")


@dataclass(frozen=True, slots=True)
class Census:
    """Entries per (provider, kind), in the order each pair first appears in the map."""

    counts: Mapping[tuple[str | None, str], int]

    @classmethod
    def of(cls, entries: Iterable[Entry]) -> Census:
        return cls(Counter(map(_PROVIDER_KIND, entries)))
