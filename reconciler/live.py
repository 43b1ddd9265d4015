"""The live supply map: every bound provider's inventory, gathered in parallel and merged.

A provider that fails, times out, answers garbage or reports only part of what it holds
is listed in ``unknown`` with the reason, and its entries are left out: they are
*unknown*, never *absent*, so the planner plans nothing (no create, no delete) for them.
The same holds for providers not asked at all (``only``). ``load_live_snapshot`` reads
the same map from a file that proxies exported (``xce-plan --live FILE``).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compiler.bindings import BindingError, Bindings
from compiler.names import MAX_NAME_BYTES, shown, too_long_reason
from compiler.problems import Hints, Problem, Severity, Where
from compiler.supply_map import (
    SCHEMA_VERSION,
    DecodedMap,
    Entry,
    MapReader,
    Session,
    SupplyMap,
    read_map,
    session_error,
)
from reconciler.plan.render.common import TEXT_LIMIT, shorten
from reconciler.protocol import ErrorCode, ProviderError, Request, inventory_session, segments
from reconciler.providers.registry import open_bound

if TYPE_CHECKING:
    from reconciler.state.store import StateStore

# Problem codes (docs/errors.md, "Providers and live map").
BAD_BINDING = "XCE700"
UNAVAILABLE = "XCE701"
TIMED_OUT = "XCE702"
GARBAGE = "XCE703"
REFUSED = "XCE704"
PARTIAL = "XCE705"
DUPLICATE = "XCE706"
SNAPSHOT_UNREADABLE = "XCE707"
SNAPSHOT_NOT_JSON = "XCE708"
SNAPSHOT_SHAPE = "XCE709"
NOT_BOUND = "XCE710"
BAD_BINDINGS = "XCE711"
SNAPSHOT_NEWER = "XCE712"
SNAPSHOT_UNREPORTED = "XCE713"  # made by the pipeline: xce-plan --live
ROLLED_BACK = "XCE714"
CANNOT_ACCEPT = "XCE715"

MAX_SNAPSHOT_PROBLEMS = 100
_INT64 = range(-(2**63), 2**64)  # the integers orjson reads as int (with unsigned 64 bits)
_REQUIRED = ("id", "kind", "state", "source")
_OPTIONAL_TEXT = ("provider", "location", "owner")
_OBJECTS = ("attributes", "spec")
# The compiler's limit on a name (compiler.names) holds for each name inside a live id,
# location or owner tag; an id holds at most a handful of names (a dataset copy: name,
# version, location kind and name), so 2,048 bytes bound a whole one.
MAX_ID_BYTES = 2048
_NAME_SEPARATORS = re.compile("[/@]")
_SURELY_SHORT = MAX_NAME_BYTES // 4  # this many characters fit in any UTF-8 byte limit
_COMPOSED = frozenset({"id", "location", "owner"})  # names joined by '/' and '@'
_TEXT_FIELDS = (*_REQUIRED, *_OPTIONAL_TEXT)

_BY_CODE = {
    ErrorCode.UNAVAILABLE: UNAVAILABLE,
    ErrorCode.DEADLINE_EXCEEDED: TIMED_OUT,
    ErrorCode.INTERNAL: GARBAGE,
}
HINTS = Hints({
    BAD_BINDING: "fix the provider's binding (kind, command, timeout, params, secrets)",
    UNAVAILABLE: "check that the provider's proxy runs and its command is installed; "
    "until it answers, its entries are unknown and nothing is planned for them",
    TIMED_OUT: "the provider did not answer within its binding's timeout; "
    "until it answers, its entries are unknown and nothing is planned for them",
    GARBAGE: "the provider's reply does not follow the protocol (docs/providers.md); "
    "until it does, its entries are unknown and nothing is planned for them",
    REFUSED: "fix the cause the provider names; until then its entries are unknown",
    PARTIAL: "see why the provider could not see everything it holds; "
    "until it reports a complete inventory, its entries are unknown",
    DUPLICATE: "each entry must be held by exactly one provider: check the bindings; until "
    "then the entry is unknown and nothing is planned for it",
    ROLLED_BACK: "a restored backup or a stale standby answers for the provider: point the "
    "binding at the current one; if the provider was replaced on purpose, accept its "
    "generation with xce-plan --accept-generation NAME",
    CANNOT_ACCEPT: "accept a generation from a live gather in which the provider answers, with "
    "the state store it is recorded in (--state)",
    NOT_BOUND: "check the provider name",
    BAD_BINDINGS: "pass the bindings.json the compiler wrote",
    SNAPSHOT_UNREADABLE: "pass the path of a live map JSON file",
    SNAPSHOT_NEWER: "export it with the xce-gitops version that plans it, or upgrade",
    SNAPSHOT_UNREPORTED: "export the snapshot again once the provider answers; until then its "
    "entries are unknown and nothing is planned for them",
})


@dataclass(frozen=True, slots=True)
class LiveResult:
    live: SupplyMap
    problems: tuple[Problem, ...] = ()


@dataclass(slots=True)
class _Report:
    """One provider's answer: entries and generation, or why there are none."""

    provider: str
    entries: list[Entry] = field(default_factory=list)
    generation: int | None = None
    reason: str | None = None
    problem: Problem | None = None
    session: Session | None = None  # since when it serves its present session (P8)


def too_long(key: str, value: str) -> str | None:
    """Why a text field of a live entry breaks the compiler's name limits, or None.

    Ids come from providers, which may be buggy or hostile: a 1 MiB id would be carried
    into every plan, rendering and state row."""
    if len(value) <= _SURELY_SHORT:  # the usual case: no encoding, no split
        return None
    if key not in _COMPOSED:
        why = too_long_reason(value)
        return None if why is None else f"'{key}' {shown(value)} is too long: {why}"
    size = len(value.encode("utf-8", "surrogatepass"))  # a built-in may report any str
    if size > MAX_ID_BYTES:
        return f"'{key}' is {size} bytes long in UTF-8; at most {MAX_ID_BYTES} are allowed"
    for name in _NAME_SEPARATORS.split(value):
        why = too_long_reason(name)
        if why is not None:
            return f"'{key}' {shown(value)} holds a name that is too long: {why}"
    return None


# The topology maps (R5) found valid: a site has few places (a rack, a switch), so each is
# checked once, not once per host; bounded, whatever a provider sends. The last one is
# kept apart: hosts come group by group, and one comparison is the cheapest test.
_PLACES_SEEN: set[tuple[tuple[str, str], ...]] = set()
_MAX_PLACES_SEEN = 4096
_LAST_PLACE: list[object] = [object()]  # equal to nothing until a place is seen


def topology_error(value: object) -> str | None:
    """What is wrong with an entry's ``attributes.topology`` (a segment map, as the
    protocol's ``segments`` checks it), or None."""
    if value == _LAST_PLACE[0]:
        return None
    if isinstance(value, dict):
        try:
            if tuple(value.items()) in _PLACES_SEEN:
                _LAST_PLACE[0] = value
                return None
        except TypeError:  # a value that no label is (a list)
            pass
    try:
        place = segments(value, "'attributes.topology'")
    except ProviderError as err:
        return shorten(err.message, TEXT_LIMIT)  # the value may be any size
    if len(_PLACES_SEEN) >= _MAX_PLACES_SEEN:
        _PLACES_SEEN.clear()
    _PLACES_SEEN.add(tuple(place.items()))
    _LAST_PLACE[0] = place
    return None


def entry_errors(doc: object) -> list[tuple[str | None, str]]:
    """What is wrong with one entry object, as (field, message) pairs; empty when valid."""
    if not isinstance(doc, Mapping):
        return [(None, "entry is not an object")]
    get = doc.get  # one entry of millions: keep the valid path to a few dict lookups
    errs: list[tuple[str | None, str]] = []
    longer: list[str] = []  # text fields too long to be surely within the name limits
    for key in _REQUIRED:
        value = get(key)
        if not isinstance(value, str) or not value:
            errs.append((key, f"'{key}' must be a non-empty string"))
        elif len(value) > _SURELY_SHORT:
            longer.append(key)
    for key in _OPTIONAL_TEXT:
        value = get(key)
        if value is not None and not isinstance(value, str):
            errs.append((key, f"'{key}' must be a string"))
        elif value is not None and len(value) > _SURELY_SHORT:
            longer.append(key)
    amount = get("amount")
    if amount is not None and (not isinstance(amount, int) or isinstance(amount, bool)):
        errs.append(("amount", "'amount' must be an integer in base units"))
    for key in _OBJECTS:
        value = get(key)
        if value is not None and not isinstance(value, Mapping):
            errs.append((key, f"'{key}' must be an object"))
    attributes = get("attributes")
    if isinstance(attributes, dict) and "topology" in attributes:  # JSON's objects
        why = topology_error(attributes["topology"])
        if why is not None:
            errs.append(("attributes", why))
    for key in longer:
        why = too_long(key, doc[key])
        if why is not None:
            errs.append((key, why))
    if not errs and not doc["id"].startswith(doc["kind"] + "/"):
        errs.append(("id", f"id {shown(doc['id'])} does not start with its kind "
                     f"'{doc['kind']}/'"))
    return errs


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


def _parse_inventory(provider: str, result: Mapping[str, Any]) -> _Report:
    generation, entries = result.get("generation"), result.get("entries")
    if not _is_generation(generation):
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
        errs = entry_errors(doc)
        if errs:
            return _garbage(provider, f"inventory entry #{i}: {errs[0][1]}")
        if doc.get("provider") not in (None, provider):
            return _garbage(provider, f"entry {shown(doc['id'])} claims provider "
                            f"{shown(doc['provider'])}")
        if doc["id"] in parsed:
            return _garbage(provider, f"entry {shown(doc['id'])} is listed twice")
        entry = Entry.from_json(doc)
        parsed[entry.id] = entry if entry.provider else replace(entry, provider=provider)
    return _Report(provider, list(parsed.values()), generation, session=session)


def _ask(provider: str, bindings: Bindings, workdir: Path, owner: str) -> _Report:
    try:
        transport = open_bound(bindings, provider, workdir)
    except ProviderError as err:
        bad = err.code is ErrorCode.INVALID_ARGUMENT
        return _failed(provider, err, BAD_BINDING if bad else None)
    try:
        reply = transport.call(Request(verb="inventory", owner=owner))
    finally:
        transport.close()
    if not reply.ok:
        assert reply.error is not None
        return _failed(provider, reply.error)
    return _parse_inventory(provider, reply.result)


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
) -> LiveResult:
    """Ask every bound provider for its inventory (``bindings`` may also be given as the
    bindings.json document). ``only`` restricts the providers asked; the others are
    listed as unknown.
    """
    if not isinstance(bindings, Bindings):
        try:
            bindings = Bindings.from_json(bindings)
        except BindingError as err:
            problem = HINTS.problem(BAD_BINDINGS, str(err), "bindings")
            return LiveResult(SupplyMap(entries={}, owner=owner), (problem,))
    return _gathered(bindings, workdir, owner, max_workers, only)


def _gathered(bindings: Bindings, workdir: Path, owner: str, max_workers: int,
              only: Collection[str] | None) -> LiveResult:
    providers = bindings.names
    problems: list[Problem] = [
        HINTS.problem(NOT_BOUND, f"provider '{name}' is not bound", name)
        for name in sorted(set(only or ()) - set(providers))
    ]
    asked = sorted(n for n in providers if only is None or n in only)
    unknown = {n: "not asked (restricted to other providers)" for n in providers if n not in asked}
    reports: list[_Report] = []
    if asked:
        with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(asked)))) as pool:
            reports = list(pool.map(lambda n: _ask(n, bindings, workdir, owner), asked))
    for report in reports:
        if report.problem is not None:
            problems.append(report.problem)
        if report.reason is not None:
            unknown[report.provider] = report.reason
    merged = _merge(r for r in reports if r.reason is None)
    generations = {r.provider: r.generation for r in reports if r.generation is not None}
    live = SupplyMap(
        entries=merged.entries,
        site=owner.removeprefix("site/"),
        owner=owner,
        unknown=dict(sorted(unknown.items())),
        generations=generations,
        unknown_entries=merged.contested,
        sessions={r.provider: r.session for r in reports
                  if r.session is not None and r.reason is None},
    )
    return LiveResult(live, (*problems, *merged.problems))


def distrust_rollbacks(live: SupplyMap, recorded: Mapping[str, int]) -> LiveResult:
    """``live`` with every provider whose generation is below the one ``recorded`` (the
    state store's, from earlier gathers) made unknown: generations only grow, so a lower
    one is a restored backup or a stale standby, whose inventory is not the present."""
    behind = {name: (gen, recorded[name]) for name, gen in live.generations.items()
              if name not in live.unknown and gen < recorded.get(name, gen)}
    if not behind:
        return LiveResult(live)
    problems: list[Problem] = []
    unknown = dict(live.unknown)
    for name, (gen, seen) in sorted(behind.items()):
        message = (f"provider '{name}' reports inventory generation {gen}, lower than "
                   f"generation {seen} recorded in the state store")
        unknown[name] = f"{message}; its inventory is not trusted"
        problems.append(HINTS.problem(ROLLED_BACK, message, name, severity=Severity.WARNING))
    entries = {k: e for k, e in live.entries.items() if e.provider not in behind}
    return LiveResult(replace(live, entries=entries, unknown=dict(sorted(unknown.items()))),
                      tuple(problems))


def trust_generations(live: SupplyMap, store: StateStore | None, site: str, *,
                      gathered: bool, accept: Collection[str] = ()) -> LiveResult:
    """Check ``live`` against the generations the state store recorded for ``site``, and
    record those of a live gather (``gathered``; a snapshot file is a past view, so it is
    checked but never recorded). ``accept`` names providers replaced on purpose: their
    present generation is recorded even though it is lower (``xce-plan --accept-generation``).
    """
    refused = [
        HINTS.problem(CANNOT_ACCEPT, f"cannot accept the generation of provider '{name}': "
                      f"{why}", name)
        for name in sorted(accept)
        if (why := _unacceptable(live, name, store, gathered)) is not None
    ]
    if store is None:
        return LiveResult(live, tuple(refused))
    for name in sorted(set(accept) - {p.subject for p in refused}):
        store.accept_generation(site, name, live.generations[name])
    checked = distrust_rollbacks(live, store.provider_generations(site))
    if gathered:
        trusted = checked.live
        store.record_generations(site, {name: gen for name, gen in trusted.generations.items()
                                        if name not in trusted.unknown})
    return LiveResult(checked.live, (*refused, *checked.problems))


def _unacceptable(live: SupplyMap, name: str, store: StateStore | None,
                  gathered: bool) -> str | None:
    if store is None:
        return "there is no state store to record it in"
    if not gathered:
        return "a live-map snapshot is a past view, not the provider's present answer"
    if name not in live.generations or name in live.unknown:
        return "it did not report a complete inventory"
    return None


def _schema_problem(doc: Mapping[str, Any], file: str) -> Problem | None:
    """A map written by a newer xce-gitops is refused rather than half understood."""
    schema = doc.get("schema", SCHEMA_VERSION)
    if not isinstance(schema, int) or isinstance(schema, bool) or schema < 1:
        return Problem(SNAPSHOT_SHAPE, f"'schema' must be a whole number ≥ 1, got {schema!r}",
                       "", Where(file, ("schema",)))
    if schema > SCHEMA_VERSION:
        return HINTS.problem(SNAPSHOT_NEWER, f"the live map has schema {schema}; this "
                             f"xce-gitops reads up to schema {SCHEMA_VERSION}",
                             where=Where(file, ("schema",)))
    return None


def _snapshot_problems(doc: Any, file: str) -> list[Problem]:
    if not isinstance(doc, Mapping) or not isinstance(doc.get("entries"), list):
        return [Problem(SNAPSHOT_SHAPE, "a live map must be an object with an 'entries' list",
                        "export it with the same format as build/supply-map.json", Where(file))]
    schema = _schema_problem(doc, file)
    if schema is not None:
        return [schema]
    problems: list[Problem] = []
    seen: set[str] = set()
    for i, raw in enumerate(doc["entries"]):
        for key, message in entry_errors(raw):
            path: tuple[str | int, ...] = ("entries", i) + ((key,) if key else ())
            problems.append(Problem(SNAPSHOT_SHAPE, f"entry #{i}: {message}", "",
                                    Where(file, path)))
        entry_id = raw.get("id") if isinstance(raw, Mapping) else None
        if not isinstance(entry_id, str):
            continue
        if entry_id in seen:
            problems.append(Problem(SNAPSHOT_SHAPE, f"entry {entry_id} is listed twice", "",
                                    Where(file, ("entries", i, "id"))))
        seen.add(entry_id)
    return problems + _field_problems(doc, file)


def _is_reason(value: object) -> bool:
    return isinstance(value, str)


def _is_generation(value: object) -> bool:
    """A whole number ≥ 0 that orjson reads as one (msgspec reads 2**64 exactly, orjson not)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**64


def _is_session(value: object) -> bool:
    return session_error(value) is None


# What the planner reads from each provider: why it did not report, and its generation
# (the empty-inventory guard tells a new provider by it); why single entries are unknown;
# and since when it serves its session (the settle window).
_PER_PROVIDER = (("unknown", _is_reason, "a reason (a string)"),
                 ("generations", _is_generation, "a whole number ≥ 0"),
                 ("unknown_entries", _is_reason, "a reason (a string)"),
                 ("sessions", _is_session, "a session {\"id\": text, \"since\": seconds ≥ 0}"))


def _field_problems(doc: Mapping[str, Any], file: str) -> list[Problem]:
    problems = [
        Problem(SNAPSHOT_SHAPE, f"'{key}' must be an object", "", Where(file, (key,)))
        for key in ("unknown", "generations", "settings", "unknown_entries", "sessions")
        if doc.get(key) is not None and not isinstance(doc[key], Mapping)
    ]
    if problems:
        return problems
    for key, valid, what in _PER_PROVIDER:
        problems += [
            Problem(SNAPSHOT_SHAPE, f"{key}.{name}: must be {what}, got {value!r}", "",
                    Where(file, (key, str(name))))
            for name, value in (doc.get(key) or {}).items() if not valid(value)
        ]
    return problems


def _plain_entry(e: Entry) -> bool:
    """``entry_errors`` is empty, for an entry msgspec made (so the field types hold):
    keep the two in step. An integer beyond 64 bits is a float to orjson, so an error."""
    return bool(e.kind and e.state and e.source and e.id.startswith(e.kind + "/")
                and (e.amount is None or e.amount in _INT64)
                and ("topology" not in e.attributes
                     or topology_error(e.attributes["topology"]) is None)
                and (_surely_short(e) or all(too_long(key, getattr(e, key) or "") is None
                                             for key in _TEXT_FIELDS)))


def _surely_short(e: Entry) -> bool:
    """Every text field is too short to break a limit (chained tests: the cheapest form)."""
    n = _SURELY_SHORT
    return (len(e.id) <= n and len(e.kind) <= n and len(e.state) <= n and len(e.source) <= n
            and len(e.provider or "") <= n and len(e.location or "") <= n
            and len(e.owner or "") <= n)


def _trusted(decoded: DecodedMap, file: str) -> bool:
    """Whether a snapshot ``decode_map`` made is the map as it stands (twice as fast, a third
    of the memory), or needs the general path, which says what is wrong."""
    entries = decoded.supply.entries
    header = decoded.header
    return not (decoded.listed != len(entries) or _schema_problem(header, file) is not None
                or _field_problems(header, file)
                or not all(map(_plain_entry, entries.values())))


def _listed(problems: list[Problem], file: str) -> list[Problem]:
    """At most MAX_SNAPSHOT_PROBLEMS of ``problems``, and how many more there are."""
    listed = problems[:MAX_SNAPSHOT_PROBLEMS]
    if len(problems) > len(listed):
        listed.append(Problem(SNAPSHOT_SHAPE, f"… and {len(problems) - len(listed)} more problems",
                              "", Where(file)))
    return listed


def _snapshot_reader(file: str) -> MapReader:
    return MapReader(
        unreadable=lambda err: HINTS.problem(
            SNAPSHOT_UNREADABLE, f"cannot read live map: {err.strerror}", where=Where(file)),
        not_json=lambda err: Problem(SNAPSHOT_NOT_JSON, f"live map is not valid JSON: {err.msg}",
                                     "", Where(file, line=err.lineno, column=err.colno)),
        malformed=lambda err: Problem(SNAPSHOT_SHAPE, f"not a live map ({err})", "",
                                      Where(file)),
        problems=lambda doc: _listed(_snapshot_problems(doc, file), file),
        trusted=lambda decoded: _trusted(decoded, file),
    )


def load_live_snapshot(path: Path) -> SupplyMap:
    """A live map saved to a file; any problem with it raises UserError naming the file."""
    return read_map(path, _snapshot_reader(str(path))).supply
