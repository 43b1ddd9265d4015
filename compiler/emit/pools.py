"""License pools, storage pools and custom counters (PR-1)."""

from __future__ import annotations

from compiler.contract.vocabulary import EntryKind
from compiler.emit.context import EmitContext
from compiler.model.document import SiteDocument


def emit_pools(doc: SiteDocument, ctx: EmitContext) -> None:
    for lic in doc.licenses:
        p = lic.item
        ctx.at(lic.where)
        spec: dict[str, object] = {}
        if p.borrow is not None:
            spec = {"borrow_max": p.borrow.max, "borrow_provider": p.borrow.provider}
        ctx.controlled(f"license/{p.name}@site", EntryKind.LICENSE, p.amount, location="site",
                       spec=spec)
    for sp in doc.storage_pools:
        ctx.at(sp.where)
        ctx.controlled(
            f"storage-pool/{sp.item.name}",
            EntryKind.STORAGE_POOL,
            sp.item.capacity,
            location=f"pool/{sp.item.name}",
        )
    for c in doc.counters:
        ctx.at(c.where)
        ctx.controlled(
            f"counter/{c.item.name}@{c.item.location}",
            EntryKind.COUNTER,
            c.item.amount,
            location=c.item.location,
        )
