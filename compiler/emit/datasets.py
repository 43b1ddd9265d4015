"""Datasets, their copies at locations, and each location's cache capacity (PR-5)."""

from __future__ import annotations

from compiler.emit.context import EmitContext
from compiler.model.document import SiteDocument
from compiler.supply_map import Entry


def emit_datasets(doc: SiteDocument, ctx: EmitContext) -> None:
    for loc in doc.datasets:
        d = loc.item
        ident = f"{d.name}@{d.version}"
        ctx.controlled(
            f"dataset/{ident}", "dataset", d.size, spec={"digest": d.digest, "source": d.source}
        )
        for copy in d.copies:
            ctx.add(
                Entry(
                    id=f"dataset-copy/{ident}@{copy.location}",
                    kind="dataset-copy",
                    state="available",
                    source="config",
                    provider=copy.provider,
                    location=copy.location,
                    amount=d.size,
                    spec={"dataset": ident, "digest": d.digest, "source": d.source},
                    owner=ctx.owner,
                )
            )
    for c in doc.caches:
        ctx.controlled(
            f"counter/cache@{c.item.location}",
            "counter",
            c.item.capacity,
            location=c.item.location,
            spec={"provider": c.item.provider},
        )
