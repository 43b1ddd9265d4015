"""Which providers' reports the state store lets a plan trust (docs/plan.md).

Two memories of earlier reads decide it: the highest inventory generation each provider
reported (a lower one is a restored backup or a stale standby), and how many entries of
each kind it reported at the last trusted read (an inventory that lost a large part of
them since, beyond what applies removed, is a lost table or a garbled file, not the
cluster). A provider that fails either is unknown: nothing is planned for its entries.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from compiler.contract.supply_map import SupplyMap
from compiler.contract.vocabulary import EntryKind
from compiler.core.problems import Problem, Severity
from compiler.core.times import format_utc
from reconciler.live.codes import CANNOT_ACCEPT, CANNOT_ACCEPT_SHRINK, HINTS, ROLLED_BACK, SHRANK
from reconciler.live.gather import NOT_ASKED, LiveResult
from reconciler.plan.census import Census
from reconciler.plan.model import Verb
from reconciler.state.runs import site_runs

if TYPE_CHECKING:
    from reconciler.state import StateStore
    from reconciler.state.inventory_counts import InventoryCounts

# Entries that come and go by themselves, not by a plan: jobs (the scheduler's record) and
# their directories (users delete them). Their counts say nothing about a lost inventory.
UNCOUNTED_KINDS = frozenset({EntryKind.JOB, EntryKind.JOB_DIR})
# The plan verbs that take an entry away: the journal's removals explain a smaller count.
_REMOVING = tuple(v.value for v in Verb if v.protocol == "delete")

LossLimit = Callable[[str], tuple[float, int]]  # provider -> (fraction, count) it may lose


def distrust_rollbacks(live: SupplyMap, recorded: Mapping[str, int]) -> LiveResult:
    """``live`` with every provider whose generation is below the one ``recorded`` (the
    state store's, from earlier gathers) made unknown: generations only grow, so a lower
    one is a restored backup or a stale standby, whose inventory is not the present."""
    behind = {name: (gen, recorded[name]) for name, gen in live.generations.items()
              if name not in live.unknown and gen < recorded.get(name, gen)}
    reasons: dict[str, str] = {}
    problems: list[Problem] = []
    for name, (gen, seen) in sorted(behind.items()):
        message = (f"provider '{name}' reports inventory generation {gen}, lower than "
                   f"generation {seen} recorded in the state store")
        reasons[name] = f"{message}; its inventory is not trusted"
        problems.append(HINTS.problem(ROLLED_BACK, message, name, severity=Severity.WARNING))
    return LiveResult(distrusted(live, reasons), tuple(problems))


def distrusted(live: SupplyMap, reasons: Mapping[str, str]) -> SupplyMap:
    """``live`` with the providers of ``reasons`` unknown, for those reasons."""
    if not reasons:
        return live
    entries = {k: e for k, e in live.entries.items() if e.provider not in reasons}
    unknown = {**live.unknown, **reasons}
    return replace(live, entries=entries, unknown=dict(sorted(unknown.items())))


def kind_counts(live: SupplyMap, census: Census | None = None) -> dict[str, dict[str, int]]:
    """Per provider that reported completely, its entries per counted kind. ``census``: the
    counts of ``live``, or of a map it was cut from by making providers unknown (their
    entries are left out here anyway), so that a map is counted once."""
    if census is None:
        census = Census.of(live.entries.values())
    found: dict[str, dict[str, int]] = {name: {} for name in live.generations
                                        if name not in live.unknown}
    for (provider, kind), n in census.counts.items():
        if provider in found and kind not in UNCOUNTED_KINDS:
            found[provider][kind] = n
    return found


@dataclass(frozen=True, slots=True)
class _Loss:
    kind: str
    before: int
    now: int
    removed: int

    @property
    def lost(self) -> int:
        return max(0, self.before - self.now - self.removed)

    def text(self) -> str:
        applied = f", beyond the {self.removed} that applies removed" if self.removed else ""
        return f"{self.now} {self.kind} entries, {self.lost} fewer than before{applied}"


def _losses(before: Mapping[str, int], now: Mapping[str, int],
            removed: Mapping[str, int], limit: tuple[float, int]) -> list[_Loss]:
    fraction, count = limit
    losses = [_Loss(kind, n, now.get(kind, 0), removed.get(kind, 0))
              for kind, n in sorted(before.items()) if kind not in UNCOUNTED_KINDS]
    return [x for x in losses if x.lost >= max(count, 1) and x.lost > fraction * x.before]


def _shrunk(name: str, record: InventoryCounts, now: Mapping[str, int], store: StateStore,
            site: str, limit: tuple[float, int]) -> str | None:
    """Why provider ``name``'s inventory lost too much since ``record``, or None. The journal
    is read only for a provider that looks shrunk: its removals may explain it."""
    if not _losses(record.kinds, now, {}, limit):
        return None
    removed = Counter(entry.partition("/")[0] for provider, entry in
                      store.done_since(site_runs(site), _REMOVING, record.recorded)
                      if provider == name)
    losses = _losses(record.kinds, now, removed, limit)
    if not losses:
        return None
    fraction, count = limit
    return (f"provider '{name}' reports {'; '.join(x.text() for x in losses)}, since "
            f"{format_utc(record.recorded.timestamp())} (the last trusted read): it may lose "
            f"at most {fraction:.0%} of a kind, or fewer than {max(count, 1)} entries, between "
            "two reads (site.safety.max_inventory_loss)")


def distrust_shrinks(live: SupplyMap, store: StateStore, site: str, limit: LossLimit,
                     accept: Collection[str] = (), census: Census | None = None) -> LiveResult:
    """``live`` with every provider whose inventory lost more than ``limit`` allows since
    the last trusted read made unknown (but those in ``accept``: the loss is real);
    ``census``: the counts of ``live``, when the caller has them."""
    recorded = store.inventory_counts(site)
    counts = kind_counts(live, census)
    reasons: dict[str, str] = {}
    problems: list[Problem] = []
    for name, now in sorted(counts.items()):
        if name in accept or name not in recorded:
            continue
        why = _shrunk(name, recorded[name], now, store, site, limit(name))
        if why is not None:
            reasons[name] = f"{why}; its inventory is not trusted"
            problems.append(HINTS.problem(SHRANK, why, name, severity=Severity.WARNING))
    return LiveResult(distrusted(live, reasons), tuple(problems))


def trust_generations(live: SupplyMap, store: StateStore | None, site: str, *,
                      gathered: bool, accept: Collection[str] = (),
                      shrink: LossLimit | None = None, accept_shrink: Collection[str] = (),
                      record_accepted: bool = True) -> LiveResult:
    """Check ``live`` against what the state store recorded for ``site``, and record what a
    live gather (``gathered``) trusted; a snapshot file is a past view, so it is checked
    but never recorded. ``accept`` names providers replaced on purpose: their present
    generation is recorded even though it is lower (``xce-plan --accept-generation``).
    With ``shrink`` (what each provider may lose between two reads), inventories that lost
    more are unknown too, but those in ``accept_shrink`` (``xce-plan --accept-shrink``),
    whose present counts become the record only with ``record_accepted``: a plan proposes
    the acceptance, the apply of that plan (which carries it) records it.
    """
    refused = _refusals(live, store, gathered=gathered, accept=accept,
                        accept_shrink=accept_shrink)
    if store is None:
        return LiveResult(live, tuple(refused))
    for name in sorted(set(accept) - {p.subject for p in refused}):
        store.accept_generation(site, name, live.generations[name])
    checked = distrust_rollbacks(live, store.provider_generations(site))
    shrunk, census = LiveResult(checked.live), None
    if shrink is not None:
        census = Census.of(checked.live.entries.values())  # once, for the guard and the record
        shrunk = distrust_shrinks(checked.live, store, site, shrink, accept_shrink, census)
    trusted = shrunk.live
    if gathered:
        _record_trusted(trusted, store, site, census, unrecorded=() if record_accepted
                        else accept_shrink)
    # the counts hold for the map planned only when the guard cut no provider from it
    kept = census if trusted is checked.live else None
    return LiveResult(trusted, (*refused, *checked.problems, *shrunk.problems), kept)


def _refusals(live: SupplyMap, store: StateStore | None, *, gathered: bool,
              accept: Collection[str], accept_shrink: Collection[str]) -> list[Problem]:
    """The acceptances asked for that cannot be given: a generation, a shrunk inventory."""
    refused = [
        HINTS.problem(CANNOT_ACCEPT, f"cannot accept the generation of provider '{name}': "
                      f"{why}", name)
        for name in sorted(accept)
        if (why := _unacceptable(live, name, store, gathered)) is not None
    ]
    refused += [
        HINTS.problem(CANNOT_ACCEPT_SHRINK, f"cannot accept the shrunk inventory of provider "
                      f"'{name}': {why}", name)
        for name in sorted(accept_shrink) if (why := _unshrinkable(live, name)) is not None
    ]
    return refused


def _record_trusted(trusted: SupplyMap, store: StateStore, site: str, census: Census | None,
                    *, unrecorded: Collection[str]) -> None:
    """Record the generations of the providers ``trusted`` knows and, with a ``census`` (of
    the map ``trusted`` was cut from), their inventory counts (but those of ``unrecorded``:
    an acceptance only proposed)."""
    store.record_generations(site, {name: gen for name, gen in trusted.generations.items()
                                    if name not in trusted.unknown})
    if census is not None:
        store.record_inventory_counts(site, {
            name: kinds for name, kinds in kind_counts(trusted, census).items()
            if name not in unrecorded})


def _unacceptable(live: SupplyMap, name: str, store: StateStore | None,
                  gathered: bool) -> str | None:
    if store is None:
        return "there is no state store to record it in"
    if not gathered:
        return "a live-map snapshot is a past view, not the provider's present answer"
    if name not in live.generations or name in live.unknown:
        return "it did not report a complete inventory"
    return None


def _unshrinkable(live: SupplyMap, name: str) -> str | None:
    """Why ``--accept-shrink NAME`` cannot be honoured (a provider not asked, as in an
    apply's check of some providers only, is no refusal: there is nothing to accept)."""
    why = live.unknown.get(name)
    if why is not None and why != NOT_ASKED:
        return "it did not report a complete inventory"
    if why is None and name not in live.generations:
        return "it is not bound, or did not report"
    return None
