"""What every emitter needs: the owner tag, the controller-map provider's name and the
list of entries they all append to, in emit order."""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler.supply_map import Entry


@dataclass(slots=True)
class EmitContext:
    owner: str
    controller: str
    entries: list[Entry] = field(default_factory=list)

    def add(self, entry: Entry) -> None:
        self.entries.append(entry)

    def controlled(
        self,
        id: str,
        kind: str,
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
                kind=kind,
                state="available",
                source="config",
                provider=self.controller,
                location=location,
                amount=amount,
                attributes=attributes or {},
                spec=spec or {},
                owner=self.owner,
            )
        )
