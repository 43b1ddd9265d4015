"""Datasets, their copies at locations, and each location's cache capacity (PR-5)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from compiler.contract.supply_map import Entry
from compiler.contract.vocabulary import CopyState, EntryKind
from compiler.emit.context import EmitContext
from compiler.model.datasets import Dataset
from compiler.model.document import SiteDocument


def dataset_spec(d: Dataset) -> dict[str, Any]:
    """The dataset entry's spec. A correction travels with it, so the controller map keeps
    why an applied version was corrected, and a plan from a compiled map still knows it."""
    spec: dict[str, Any] = {"digest": d.digest, "source": d.source}
    if d.correction is not None:
        spec["correction"] = d.correction.model_dump()
    return spec


def copies_by_location(doc: SiteDocument) -> dict[str, list[str]]:
    """The ``name@version`` copies at each location, sorted: the locality attribute (PR-3)
    of the host group (``group/<g>``) or host (``host/<h>``) holding them."""
    out: dict[str, list[str]] = defaultdict(list)
    for loc in doc.datasets:
        for copy in loc.item.copies:
            out[copy.location].append(loc.item.ident)
    return {location: sorted(idents) for location, idents in out.items()}


def emit_datasets(doc: SiteDocument, ctx: EmitContext) -> None:
    for loc in doc.datasets:
        d = loc.item
        ident = d.ident
        ctx.at(loc.where)
        ctx.controlled(f"dataset/{ident}", EntryKind.DATASET, d.size, spec=dataset_spec(d))
        for i, copy in enumerate(d.copies):
            ctx.at(loc.where, "copies", i)
            ctx.add(
                Entry(
                    id=f"dataset-copy/{ident}@{copy.location}",
                    kind=EntryKind.DATASET_COPY.value,
                    state=CopyState.AVAILABLE.value,
                    source="config",
                    provider=copy.provider,
                    location=copy.location,
                    amount=d.size,
                    spec={"dataset": ident, "digest": d.digest, "source": d.source},
                    owner=ctx.owner,
                )
            )
    for c in doc.caches:
        ctx.at(c.where)
        ctx.controlled(
            f"counter/cache@{c.item.location}",
            EntryKind.COUNTER,
            c.item.capacity,
            location=c.item.location,
            spec={"provider": c.item.provider},
        )
