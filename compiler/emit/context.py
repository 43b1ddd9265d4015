"""What every emitter needs: the owner tag, the controller-map provider's name, the list of
entries they all append to, in emit order, and where in the site-config each came from."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import repeat
from operator import attrgetter

from compiler.contract.supply_map import Entry
from compiler.contract.vocabulary import PRESENT, EntryKind
from compiler.core.problems import Where, YPath

_ID = attrgetter("id")
Run = tuple[int, Where, YPath]  # (index of the run's first entry, item, path in the item)


class Sources(Mapping[str, Where]):
    """Entry id → the site-config item that produced it (a YAML path, not yet a line).

    Kept as runs (the index of a run's first entry, its item, and the path of the part of
    it, such as one grant of a quota item) and made a dict only when first read: a compile
    that never asks (every plain one) pays one tuple per item, not a dict slot per entry,
    nor a ``Where`` per part. A run's ``Where`` is shared by its entries, never one per host."""

    __slots__ = ("_built", "_entries", "_runs")

    def __init__(self, runs: list[Run], entries: list[Entry]) -> None:
        self._runs = runs
        self._entries = entries
        self._built: dict[str, Where] | None = None

    def _map(self) -> dict[str, Where]:
        if self._built is None:
            built: dict[str, Where] = {}
            parts: dict[tuple[int, YPath], Where] = {}  # one Where per part, however many runs
            ends = [run[0] for run in self._runs[1:]] + [len(self._entries)]
            for (start, where, path), end in zip(self._runs, ends, strict=True):
                if path:  # a part of the item, named by its key: made here, not at emit
                    key = (id(where), path)
                    if key not in parts:
                        parts[key] = Where(where.file, where.ypath + path, key=True)
                    where = parts[key]
                built.update(zip(map(_ID, self._entries[start:end]), repeat(where)))
            self._built = built
        return self._built

    def __getitem__(self, entry_id: str) -> Where:
        return self._map()[entry_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._map())

    def __len__(self) -> int:
        return len(self._map())


@dataclass(slots=True)
class EmitContext:
    owner: str
    controller: str
    entries: list[Entry] = field(default_factory=list)
    _runs: list[Run] = field(default_factory=list)

    def at(self, where: Where, *path: str | int) -> None:
        """The entries added from now on come from the site-config item at ``where``, or
        from its part at ``path`` (an override of a host group, a grant of a quota item)."""
        self._runs.append((len(self.entries), where, path))

    def sources(self) -> Sources:
        """Where each entry added so far came from (read lazily: see ``Sources``)."""
        return Sources(self._runs, self.entries)

    def add(self, entry: Entry) -> None:
        self.entries.append(entry)

    def controlled(
        self,
        id: str,
        kind: EntryKind,
        amount: int | None = None,
        *,
        location: str | None = None,
        attributes: dict[str, object] | None = None,
        spec: dict[str, object] | None = None,
    ) -> None:
        """An entry held by the controller map (counters, pools, datasets, groups)."""
        self.entries.append(
            Entry(
                id=id,
                kind=kind.value,
                state=PRESENT.value,
                source="config",
                provider=self.controller,
                location=location,
                amount=amount,
                attributes=attributes or {},
                spec=spec or {},
                owner=self.owner,
            )
        )

