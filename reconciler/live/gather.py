"""The live supply map: every bound provider's inventory, gathered in parallel and merged.

A provider that fails, times out, answers garbage or reports only part of what it holds
is listed in ``unknown`` with the reason, and its entries are left out: they are
*unknown*, never *absent*, so the planner plans nothing (no create, no delete) for them.
The same holds for providers not asked at all (``only``), and for a report with one
entry outside the contract (``compiler.contract.entry``) or of a kind the provider does
not declare in ``info``: a provider that garbles one entry may have garbled others.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from compiler.contract.bindings import BindingError, Bindings
from compiler.contract.entry import entry_errors
from compiler.contract.supply_map import Entry, Session, SupplyMap
from compiler.core.names import shown
from compiler.core.problems import Problem, Severity
from compiler.core.text_limits import TEXT_LIMIT, shorten
from reconciler.live.codes import (
    BAD_BINDING,
    BAD_BINDINGS,
    DUPLICATE,
    GARBAGE,
    HINTS,
    NOT_BOUND,
    PARTIAL,
    REFUSED,
    TIMED_OUT,
    UNAVAILABLE,
)
from reconciler.plan.census import Census
from reconciler.protocol import ErrorCode, ProviderError, Request, inventory_session
from reconciler.relay import Relay, open_provider_for
from reconciler.transports import Transport

_BY_CODE = {
    ErrorCode.UNAVAILABLE: UNAVAILABLE,
    ErrorCode.DEADLINE_EXCEEDED: TIMED_OUT,
    ErrorCode.INTERNAL: GARBAGE,
}
# An ``info`` that fails so: the provider is down or broken, and its inventory is not asked
# (a hung provider costs one timeout, not two). Any other refusal: it declares no kinds.
_INFO_FATAL = frozenset({ErrorCode.UNAVAILABLE, ErrorCode.DEADLINE_EXCEEDED,
                         ErrorCode.INTERNAL})
NOT_ASKED = "not asked (restricted to other providers)"  # an unknown provider's reason


@dataclass(frozen=True, slots=True)
class LiveResult:
    live: SupplyMap
    problems: tuple[Problem, ...] = ()
    census: Census | None = None  # ``live``'s counts, when the trust step made them


@dataclass(slots=True)
class _Report:
    """One provider's answer: entries and generation, or why there are none."""

    provider: str
    entries: list[Entry] = field(default_factory=list)
    generation: int | None = None
    reason: str | None = None
    problem: Problem | None = None
    session: Session | None = None  # since when it serves its present session (P8)


def _failed(provider: str, err: ProviderError, code: str | None = None) -> _Report:
    message = shorten(err.message, TEXT_LIMIT)  # repeated in every unknown entry's reason
    if not message.startswith(f"provider '{provider}'"):
        message = f"provider '{provider}' could not report its inventory: {message}"
    code = code or _BY_CODE.get(err.code, REFUSED)
    severity = Severity.ERROR if code == BAD_BINDING else Severity.WARNING
    problem = HINTS.problem(code, message, provider, severity=severity)
    return _Report(provider, reason=f"{err.code.value}: {message}", problem=problem)


def _garbage(provider: str, what: str) -> _Report:
    err = ProviderError(ErrorCode.INTERNAL, f"provider '{provider}' answered garbage ({what})")
    return _failed(provider, err)


def is_generation(value: object) -> bool:
    """A whole number ≥ 0 that orjson reads as one (msgspec reads 2**64 exactly, orjson not)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**64


def _entry_fault(provider: str, i: int, doc: Any, declared: Collection[str] | None) -> str | None:
    """Why entry #``i`` of a report makes the whole report invalid, or None."""
    errs = entry_errors(doc)
    named = f"#{i}" if not isinstance(doc, Mapping) or not isinstance(doc.get("id"), str) \
        else f"#{i} {shown(doc['id'])}"
    if errs:
        return f"inventory entry {named}: {errs[0][1]}"
    if declared is not None and doc["kind"] not in declared:
        kinds = ", ".join(sorted(declared)) or "none"
        return (f"inventory entry {named} is of kind '{doc['kind']}', which the provider does "
                f"not declare in its capabilities ({kinds})")
    if doc.get("provider") not in (None, provider):
        return f"entry {shown(doc['id'])} claims provider {shown(doc['provider'])}"
    return None


def parse_inventory(provider: str, result: Mapping[str, Any],
                    declared: Collection[str] | None = None) -> _Report:
    """A provider's ``inventory`` result, checked entry by entry; ``declared``: the kinds it
    declares in ``info`` (None: it declares none, and is held to no list)."""
    generation, entries = result.get("generation"), result.get("entries")
    if not is_generation(generation):
        return _garbage(provider, "inventory 'generation' is not a whole number from 0 to "
                        "2**64-1")
    if not isinstance(result.get("complete"), bool) or not isinstance(entries, list):
        return _garbage(provider, "inventory needs a boolean 'complete' and an 'entries' list")
    try:
        session = inventory_session(result)
    except ProviderError as err:
        return _garbage(provider, err.message)
    if not result["complete"]:
        message = f"provider '{provider}' reported a partial inventory (complete: false)"
        problem = HINTS.problem(PARTIAL, message, provider, severity=Severity.WARNING)
        return _Report(provider, generation=generation, reason=message, problem=problem)
    parsed: dict[str, Entry] = {}
    for i, doc in enumerate(entries):
        fault = _entry_fault(provider, i, doc, declared)
        if fault is not None:
            return _garbage(provider, fault)
        if doc["id"] in parsed:
            return _garbage(provider, f"entry {shown(doc['id'])} is listed twice")
        entry = Entry.from_json(doc)
        parsed[entry.id] = entry if entry.provider else replace(entry, provider=provider)
    return _Report(provider, list(parsed.values()), generation, session=session)


def _declared(provider: str, transport: Transport) -> tuple[frozenset[str] | None,
                                                            _Report | None]:
    """The kinds the provider declares in ``info``, or None; or the failed report when
    ``info`` shows it is down or broken."""
    reply = transport.call(Request(verb="info"))
    if not reply.ok:
        assert reply.error is not None
        if reply.error.code in _INFO_FATAL:
            return None, _failed(provider, reply.error)
        return None, None
    kinds = reply.result.get("capabilities")
    if isinstance(kinds, list) and all(isinstance(k, str) for k in kinds):
        return frozenset(kinds), None
    return None, None


def _ask(provider: str, bindings: Bindings, workdir: Path, owner: str,
         relay: Relay | None) -> _Report:
    try:
        transport = open_provider_for(bindings, provider, workdir, relay)
    except ProviderError as err:
        bad = err.code is ErrorCode.INVALID_ARGUMENT
        return _failed(provider, err, BAD_BINDING if bad else None)
    try:
        declared, failed = _declared(provider, transport)
        if failed is not None:
            return failed
        reply = transport.call(Request(verb="inventory", owner=owner))
    finally:
        transport.close()
    if not reply.ok:
        assert reply.error is not None
        return _failed(provider, reply.error)
    return parse_inventory(provider, reply.result, declared)


@dataclass(slots=True)
class _Merged:
    entries: dict[str, Entry]
    contested: dict[str, str]  # entry id -> why neither report is trusted
    problems: list[Problem]


def _merge(reports: Iterable[_Report]) -> _Merged:
    """Entries of all providers keyed by id. An id two providers report is trusted from
    neither: which one holds it is exactly what is in question, so it is unknown."""
    merged: dict[str, Entry] = {}
    holders: dict[str, list[str]] = {}
    for report in reports:
        for entry in report.entries:
            first = merged.setdefault(entry.id, entry)
            if first is not entry:
                holders.setdefault(entry.id, [str(first.provider)]).append(report.provider)
    contested: dict[str, str] = {}
    problems: list[Problem] = []
    for entry_id, names in sorted(holders.items()):
        del merged[entry_id]
        both = " and ".join(f"'{n}'" for n in names)
        contested[entry_id] = f"reported by providers {both}, so neither report is trusted"
        problems.append(HINTS.problem(
            DUPLICATE, f"entry {entry_id} is {contested[entry_id]}: it is unknown", entry_id))
    return _Merged(merged, contested, problems)


def gather_live(
    bindings: Bindings | Mapping[str, Any],
    workdir: Path,
    owner: str,
    max_workers: int = 8,
    only: Collection[str] | None = None,
    relay: Relay | None = None,
) -> LiveResult:
    """Ask every bound provider for its inventory (``bindings`` may also be given as the
    bindings.json document). ``only`` restricts the providers asked; the others are
    listed as unknown. A proxied provider is read from what its proxy published, through
    ``relay`` (without one it is unavailable).
    """
    if not isinstance(bindings, Bindings):
        try:
            bindings = Bindings.from_json(bindings)
        except BindingError as err:
            problem = HINTS.problem(BAD_BINDINGS, str(err), "bindings")
            return LiveResult(SupplyMap(entries={}, owner=owner), (problem,))
    return _gathered(bindings, workdir, owner, max_workers, only, relay)


def _gathered(bindings: Bindings, workdir: Path, owner: str, max_workers: int,
              only: Collection[str] | None, relay: Relay | None) -> LiveResult:
    providers = bindings.names
    asked = sorted(n for n in providers if only is None or n in only)
    reports = _ask_all(asked, bindings, workdir, owner, max_workers, relay)
    problems: list[Problem] = [
        HINTS.problem(NOT_BOUND, f"provider '{name}' is not bound", name)
        for name in sorted(set(only or ()) - set(providers))
    ]
    problems += [r.problem for r in reports if r.problem is not None]
    merged = _merge(r for r in reports if r.reason is None)
    live = SupplyMap(
        entries=merged.entries,
        site=owner.removeprefix("site/"),
        owner=owner,
        unknown=_unknown(providers, asked, reports),
        generations={r.provider: r.generation for r in reports if r.generation is not None},
        unknown_entries=merged.contested,
        sessions=_sessions(reports),
    )
    return LiveResult(live, (*problems, *merged.problems))


def _ask_all(asked: list[str], bindings: Bindings, workdir: Path, owner: str,
             max_workers: int, relay: Relay | None) -> list[_Report]:
    """Each asked provider's report, in the order asked; up to ``max_workers`` at a time."""
    if not asked:
        return []
    with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(asked)))) as pool:
        return list(pool.map(lambda n: _ask(n, bindings, workdir, owner, relay), asked))


def _unknown(providers: Collection[str], asked: list[str],
             reports: list[_Report]) -> dict[str, str]:
    """The providers whose entries are not known, sorted, each with why: not asked, or
    its report's reason."""
    unknown = {n: NOT_ASKED for n in providers if n not in asked}
    unknown.update((r.provider, r.reason) for r in reports if r.reason is not None)
    return dict(sorted(unknown.items()))


def _sessions(reports: list[_Report]) -> dict[str, Session]:
    """Since when each provider that answered serves its present session (P8)."""
    return {r.provider: r.session for r in reports if r.session is not None and r.reason is None}
