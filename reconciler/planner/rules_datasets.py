"""Dataset copies (PR-5): stage what is missing or corrupt, evict what config removed, wait
while a copy is moving."""

from __future__ import annotations

from compiler.contract.supply_map import Entry
from reconciler.plan.model import FieldChange, Verb
from reconciler.planner.builder import Builder, with_state


def digest_differs(desired: Entry, live: Entry) -> bool:
    """Datasets are immutable: a copy with another digest is not the dataset at all."""
    return "digest" in desired.spec and desired.spec["digest"] != live.spec.get("digest")


def plan_copy(b: Builder, desired: Entry | None, live: Entry | None) -> None:
    if desired is None:
        assert live is not None
        if live.state == "evicting":
            b.note("pending", live, "being evicted")
        else:
            b.act(Verb.EVICT, live, "not in config", before=live, after=None, unacted="orphans")
        return
    where = desired.location or "its location"
    # What a copy must hold is its version's record (what pinned jobs resolve): while the
    # record cannot be seen, staging could put other bytes under the name (PR-5).
    b.read(f"dataset/{desired.spec.get('dataset')}")
    if live is None:
        b.act(Verb.STAGE, desired, f"missing at {where}", before=None,
              after=with_state(desired, "staging"))
    elif live.state == "staging":
        b.note("pending", desired, f"staging at {where} in progress")
    elif live.state == "evicting":
        b.note("pending", desired, "being evicted although in config; staged again once gone")
    elif live.state == "corrupt" or digest_differs(desired, live):
        why = "corrupt" if live.state == "corrupt" else "digest differs"
        b.act(Verb.STAGE, desired, f"re-stage: copy is {why}", before=live,
              after=with_state(desired, "staging"),
              changes=(FieldChange("state", live.state, "staging"),))
    # Otherwise the copy is intact with the dataset's digest: it *is* the dataset. Its
    # amount is the bytes on disk (config declares the size charged to the cache) and
    # copies are immutable (the provider refuses updates), so nothing else is compared.
