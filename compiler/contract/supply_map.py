"""The supply map (PR-1): one entry per resource at a location, keyed by a stable id.

This is the contract between the compiler (desired map) and the reconciler (live map,
plan). Entries are plain frozen data; maps are dicts keyed by id so every later stage
works per entry and never needs to deep-diff whole maps. ``read_map`` reads a map file,
the compiled map and a live snapshot alike, each with its own problems (``MapReader``).
What makes one entry valid is defined once, in ``compiler.contract.entry``, and used by
every reader of live entries (providers' inventories, snapshots, the controller map).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import attrgetter, not_
from pathlib import Path
from typing import Any, cast

import msgspec
import orjson

from compiler.contract.settings import Settings
from compiler.core.canonical import digest_of, dumps
from compiler.core.file_io import MAP_CAP, read_input
from compiler.core.names import invisible_reason, shown, too_long_reason
from compiler.core.problems import Problem, UserError

SCHEMA_VERSION = 1
# The empty attributes or spec that entries share: entries are frozen data and no mapping of
# theirs is changed in place, so millions of them need not each have an empty dict of its own.
EMPTY: Mapping[str, Any] = {}


@dataclass(frozen=True, slots=True)
class Entry:
    """One supply-map entry; ``amount`` is in base units (bytes, counts, seconds)."""

    id: str
    kind: str
    state: str
    source: str
    provider: str | None = None
    location: str | None = None
    amount: int | None = None
    attributes: Mapping[str, Any] = field(default_factory=dict)
    spec: Mapping[str, Any] = field(default_factory=dict)
    owner: str | None = None

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "state": self.state,
            "source": self.source,
            "provider": self.provider,
        }
        if self.location is not None:
            doc["location"] = self.location
        if self.amount is not None:
            doc["amount"] = self.amount
        if self.attributes:
            doc["attributes"] = dict(self.attributes)
        if self.spec:
            doc["spec"] = dict(self.spec)
        if self.owner is not None:
            doc["owner"] = self.owner
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Entry:
        return cls(
            id=doc["id"],
            kind=doc["kind"],
            state=doc["state"],
            source=doc["source"],
            provider=doc.get("provider"),
            location=doc.get("location"),
            amount=doc.get("amount"),
            attributes=doc.get("attributes") or {},
            spec=doc.get("spec") or {},
            owner=doc.get("owner"),
        )


def session_error(doc: object) -> str | None:
    """What is wrong with a session object (``{"id", "since"}``), or None when it is one."""
    if not isinstance(doc, Mapping):
        return "must be an object with 'id' and 'since'"
    sid, since = doc.get("id"), doc.get("since")
    if not isinstance(sid, str) or not sid:
        return "'id' must be a non-empty string"
    why = too_long_reason(sid) or invisible_reason(sid)
    if why is None and not sid.isprintable():
        why = "it contains a control character"
    if why is not None:
        return f"'id' {shown(sid)} is not a session id: {why}"
    if isinstance(since, bool) or not isinstance(since, int | float) or not (
        0 <= since < 2**53
    ):
        return f"'since' must be seconds since the epoch (a number ≥ 0), got {since!r}"
    return None


@dataclass(frozen=True, slots=True)
class Session:
    """When a provider's current serving session began (P8): a controller restart (a new
    boot id), a proxy failover (a new active proxy or lease epoch). ``id`` is opaque: only
    ``since`` is compared, with the plan's clock and with the hosts' ``spec.seen``."""

    id: str
    since: float

    def to_json(self) -> dict[str, Any]:
        since = float(self.since)  # also when made with an int
        return {"id": self.id, "since": int(since) if since.is_integer() else since}

    @classmethod
    def from_json(cls, doc: object) -> Session:
        """A session as a provider or a map file writes it; ValueError says what is wrong."""
        why = session_error(doc)
        if why is not None:
            raise ValueError(f"session: {why}")
        assert isinstance(doc, Mapping)
        return cls(doc["id"], float(doc["since"]))


def entries_json(entries: Iterable[Entry]) -> list[dict[str, Any]]:
    """Entries as JSON objects sorted by id (BRIEF §3)."""
    return [e.to_json() for e in sorted(entries, key=lambda e: e.id)]


@dataclass(frozen=True, slots=True)
class SupplyMap:
    """A desired or live supply map.

    ``settings`` carries the site's planning policy (discovery, join deadline, safety
    thresholds, management levels, protected ids) so that a saved map is self-contained:
    as written, and typed (``settings.checked``); a plain mapping given is read as Settings.
    A live map has ``unknown`` (provider -> reason) for providers that did not answer
    fully: their entries are unknown, never absent; ``unknown_entries`` (entry id ->
    reason) does the same for single entries, such as an id two providers both report.
    ``sessions`` (provider -> Session) says since when each provider that reports one
    serves its present session (the settle window, P8); it is not in the digest.
    """

    entries: dict[str, Entry]
    site: str = ""
    owner: str = ""
    revision: str | None = None
    dirty: bool = False
    settings: Settings = field(default_factory=Settings)
    unknown: Mapping[str, str] = field(default_factory=dict)
    generations: Mapping[str, int] = field(default_factory=dict)
    unknown_entries: Mapping[str, str] = field(default_factory=dict)
    sessions: Mapping[str, Session] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.settings, Settings):
            object.__setattr__(self, "settings", Settings(self.settings))

    @property
    def site_key(self) -> str:
        """The key a site's records are kept under (applied configurations, drift history):
        the site's name, else its owner tag for a map that names no site."""
        return self.site or self.owner

    def content_digest(self, entries: list[dict[str, Any]] | None = None) -> str:
        """Digest of entries and settings only: no revision, no timestamps."""
        if entries is None:
            entries = entries_json(self.entries.values())
        return digest_of({"entries": entries, "settings": dict(self.settings)})

    def to_json(self) -> dict[str, Any]:
        entries = entries_json(self.entries.values())
        doc: dict[str, Any] = {
            "schema": SCHEMA_VERSION,
            "site": self.site,
            "owner": self.owner,
            "revision": self.revision,
            "dirty": self.dirty,
            "digest": self.content_digest(entries),
            "settings": dict(self.settings),
            "entries": entries,
        }
        if self.unknown:
            doc["unknown"] = dict(self.unknown)
        if self.generations:
            doc["generations"] = dict(self.generations)
        if self.unknown_entries:
            doc["unknown_entries"] = dict(self.unknown_entries)
        if self.sessions:
            doc["sessions"] = {p: s.to_json() for p, s in sorted(self.sessions.items())}
        return doc

    def dumps(self) -> bytes:
        return dumps(self.to_json())

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> SupplyMap:
        entries = {}
        for raw in doc.get("entries", []):
            e = Entry.from_json(raw)
            entries[e.id] = e
        return cls._with_entries(doc, entries)

    @classmethod
    def _with_entries(cls, doc: Mapping[str, Any], entries: dict[str, Entry]) -> SupplyMap:
        return cls(
            entries=entries,
            site=doc.get("site", ""),
            owner=doc.get("owner", ""),
            revision=doc.get("revision"),
            dirty=bool(doc.get("dirty", False)),
            settings=Settings(doc.get("settings")),
            unknown=doc.get("unknown") or {},
            generations=doc.get("generations") or {},
            unknown_entries=doc.get("unknown_entries") or {},
            sessions={str(p): Session.from_json(raw)
                      for p, raw in (doc.get("sessions") or {}).items()},
        )


class _Header(msgspec.Struct, forbid_unknown_fields=True):
    """A map file's top level as msgspec decodes it, but for its entries (``_Wire``).

    Fields other than ``entries`` stay as they are in the file (``Any``), so whatever
    ``SupplyMap.from_json`` makes of them, it makes of them here too. A field not listed
    here sends the file to the general path, so ``header`` always holds every other field.
    """

    schema: Any = msgspec.UNSET
    site: Any = msgspec.UNSET
    owner: Any = msgspec.UNSET
    revision: Any = msgspec.UNSET
    dirty: Any = msgspec.UNSET
    digest: Any = msgspec.UNSET
    settings: Any = msgspec.UNSET
    unknown: Any = msgspec.UNSET
    generations: Any = msgspec.UNSET
    unknown_entries: Any = msgspec.UNSET
    sessions: Any = msgspec.UNSET


class _Wire(_Header, forbid_unknown_fields=True):
    """The whole file, entries straight into ``Entry``: the fastest, for most maps."""

    entries: list[Entry] | msgspec.UnsetType = msgspec.UNSET


class _LeanWire(_Header, forbid_unknown_fields=True):
    """The whole file, each entry its bytes, for a map over ``LEAN_BYTES`` (``_entries``)."""

    entries: list[msgspec.Raw] | msgspec.UnsetType = msgspec.UNSET


_WIRE = msgspec.json.Decoder(_Wire)
_LEAN_WIRE = msgspec.json.Decoder(_LeanWire)
_HEADER = _Header.__struct_fields__
_BATCH = msgspec.json.Decoder(list[Entry])
BATCH = 4096  # entries decoded at a time
# A map file larger than this (about 1.5 million entries) is decoded lean: memory, not time,
# is what limits a plan of two such maps (docs/performance.md, "A million hosts").
LEAN_BYTES = 512 << 20
# Fields whose values repeat across a map (a handful of kinds, states, providers, one
# owner; a host's location for each of its counters): one string object per value.
_SHARED = tuple(Entry.__dict__[name] for name in (
    "kind", "state", "source", "provider", "location", "owner"))
_MAPPINGS = (Entry.__dict__["attributes"], Entry.__dict__["spec"])


def _entries(raws: list[msgspec.Raw]) -> list[Entry]:
    """The entries of a large map file, decoded a batch at a time, each batch's repeated
    values made one object (``_share``) before the next is decoded.

    msgspec makes a new string for every value and a new dict for every missing mapping:
    about 400 bytes of an entry's 1 KB. Sharing them after each batch lets the next batch
    reuse that memory, so a map takes well under half the memory, for about twice the
    decoding time (which is why smaller maps are decoded whole)."""
    strings: dict[str | None, str | None] = {}
    out: list[Entry] = []
    for start in range(0, len(raws), BATCH):
        batch = _BATCH.decode(b"[" + b",".join(raws[start:start + BATCH]) + b"]")
        _share(batch, strings)
        out += batch
    return out


def _share(batch: list[Entry], strings: dict[str | None, str | None]) -> None:
    """One object for each repeated string value (``strings`` holds the first of each) and
    one for every empty mapping, set on the frozen entries through their slots; C loops
    (``map``), as a Python loop over the fields would cost more than the decode."""
    same = strings.setdefault
    for slot in _SHARED:
        values = list(map(slot.__get__, batch))
        deque(map(slot.__set__, batch, map(same, values, values)), maxlen=0)
    for slot in _MAPPINGS:
        bare = list(compress(batch, map(not_, map(slot.__get__, batch))))
        deque(map(slot.__set__, bare, repeat(EMPTY)), maxlen=0)


@dataclass(frozen=True, slots=True)
class KnownEntries:
    """A map file's entries by their exact bytes (``decode_map(..., index=True)``), to read
    another map file against (``decode_map(..., known=)``): an entry written with the same
    bytes decodes to an equal entry, so it is taken from here instead of decoded again."""

    by_bytes: Mapping[bytes, Entry]


@dataclass(frozen=True, slots=True)
class ReadAgainst:
    """How a map was decoded against ``KnownEntries``: every entry's bytes in file order
    (``raws``), and the entries decoded because no known entry has their bytes (``fresh``,
    with their bytes, ``fresh_raws``); all the others are the known entries themselves."""

    raws: list[msgspec.Raw]
    fresh: list[Entry]
    fresh_raws: list[msgspec.Raw]


@dataclass(frozen=True, slots=True)
class DecodedMap:
    """A map decoded from bytes; ``listed`` counts the file's entries (with duplicate ids),
    ``header`` holds its other top-level fields (``digest``, ``settings``, …) as written;
    ``known``: its entries by their bytes, when asked for (``index``); ``against``: what
    was decoded and what was known, when decoded against ``KnownEntries``."""

    supply: SupplyMap
    listed: int
    header: Mapping[str, Any]
    known: KnownEntries | None = None
    against: ReadAgainst | None = None


def decode_map(data: bytes, *, known: KnownEntries | None = None,
               index: bool = False) -> DecodedMap | None:
    """Decode a map file straight into entries, or None when it needs the general path.

    ``orjson.loads`` then ``SupplyMap.from_json`` builds a dict per entry and then the
    entry: for 500,000 entries that is 1.5 s and a transient half gigabyte. msgspec makes the
    entries from the bytes in 0.7 s. It does so only for well-typed maps (an entry whose
    fields have other types, or JSON it rejects, returns None) and then gives the same
    map, so callers keep their general path for everything else, with its messages. One
    difference remains, for integers beyond 64 bits, which orjson cannot write: orjson
    reads them as floats, msgspec exactly.

    A map under ``LEAN_BYTES`` may be decoded ``against`` the ``known`` entries of another
    (the desired map, for a live one): only the entries whose bytes differ from every known
    entry's are decoded ("decode only what differs", docs/performance.md). With ``index``
    the result keeps its entries by their bytes (``known``) for that.
    """
    small = len(data) <= LEAN_BYTES
    decoded = (_decoded_against(data, known) if known is not None and small
               else _decoded_indexed(data) if index and small else _decoded(data))
    if decoded is None:
        return None
    wire, listed, against = decoded
    header = {k: v for k in _HEADER if (v := getattr(wire, k)) is not msgspec.UNSET}
    entries = dict(zip(map(attrgetter("id"), listed), listed, strict=True))
    try:
        supply = SupplyMap._with_entries(header, entries)
    except (AttributeError, ValueError):  # sessions that are not: the general path says why
        return None
    indexed = None
    if index and against is not None and len(entries) == len(listed):
        indexed = KnownEntries(dict(zip(map(bytes, against.raws), listed, strict=True)))
    return DecodedMap(supply, len(listed), header, indexed,
                      None if known is None else against)


_Decoded = tuple[_Header, list[Entry], ReadAgainst | None]


def _decoded(data: bytes) -> _Decoded | None:
    """The file's top level and its entries, whole or (over ``LEAN_BYTES``) lean; None when
    it is not a well-typed map (a DecodeError includes msgspec's ValidationError)."""
    try:
        if len(data) <= LEAN_BYTES:
            wire = _WIRE.decode(data)
            return None if wire.entries is msgspec.UNSET else (wire, wire.entries, None)
        lean = _LEAN_WIRE.decode(data)
        return None if lean.entries is msgspec.UNSET else (lean, _entries(lean.entries), None)
    except msgspec.DecodeError:
        return None


def _decoded_indexed(data: bytes) -> _Decoded | None:
    """As ``_decoded``, each entry's bytes kept: decoded whole, then split (a fast pass that
    builds no value)."""
    decoded = _decoded(data)
    if decoded is None:
        return None
    wire, listed, _ = decoded
    raws = _LEAN_WIRE.decode(data).entries
    assert raws is not msgspec.UNSET  # the same bytes decoded as a map a moment ago
    return wire, listed, ReadAgainst(raws, listed, raws)


def _decoded_against(data: bytes, known: KnownEntries) -> _Decoded | None:
    """As ``_decoded``, but an entry whose bytes a known entry has is that entry: the same
    bytes decode to an equal entry, whichever file they are in. The others are decoded in
    one batch and put in their places."""
    try:
        lean = _LEAN_WIRE.decode(data)
        if lean.entries is msgspec.UNSET:
            return None
        raws = lean.entries
        listed: list[Entry | None] = list(map(known.by_bytes.get, map(bytes, raws)))
        places = [i for i, e in enumerate(listed) if e is None]
        fresh_raws = [raws[i] for i in places]
        fresh = _BATCH.decode(b"[" + b",".join(fresh_raws) + b"]")
    except msgspec.DecodeError:
        return None
    for i, entry in zip(places, fresh, strict=True):
        listed[i] = entry
    return lean, cast(list[Entry], listed), ReadAgainst(raws, fresh, fresh_raws)


@dataclass(frozen=True, slots=True)
class MapReader:
    """What one kind of map file calls each failure; ``read_map`` does the reading.

    ``trusted`` says whether ``decode_map``'s fast result may stand as it is (else the
    general path reads the file again and says what is wrong); ``problems`` checks the
    JSON document on the general path; ``malformed`` names a document that ``problems``
    let through but ``SupplyMap.from_json`` cannot read; ``raw`` checks what only the bytes
    show (keys given twice, which every decoder reads one way), before any map is made of
    them: given the fast decode (None when the file needs the general path), whose
    ``against`` tells which entries' bytes were not known before.
    """

    unreadable: Callable[[OSError], Problem]
    not_json: Callable[[orjson.JSONDecodeError], Problem]
    malformed: Callable[[Exception], Problem]
    problems: Callable[[Any], list[Problem]] = lambda doc: []
    trusted: Callable[[DecodedMap], bool] = lambda decoded: True
    raw: Callable[[bytes, DecodedMap | None], list[Problem]] = lambda data, decoded: []


def read_json(path: Path, reader: MapReader) -> Any:
    """A JSON file written beside a map (bindings.json), with ``reader``'s problems."""
    return _parse(_read(path, reader), reader)


def _read(path: Path, reader: MapReader) -> bytes:
    """Never waits nor reads without end (``read_input``: a FIFO or device is ``Refused``)."""
    try:
        return read_input(path, MAP_CAP)
    except OSError as err:
        raise UserError([reader.unreadable(err)]) from None


def _parse(data: bytes, reader: MapReader) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise UserError([reader.not_json(err)]) from None


def read_map(path: Path, reader: MapReader, *, known: KnownEntries | None = None,
             index: bool = False) -> DecodedMap:
    """A map file: decoded straight into entries when it is well-typed (``decode_map``,
    with ``known`` and ``index`` as there), else parsed and checked; every failure raises
    UserError with ``reader``'s problem."""
    data = _read(path, reader)
    try:
        decoded = decode_map(data, known=known, index=index)
    except RecursionError:  # msgspec's own depth limit: no reader of ours could walk it either
        raise UserError(reader.raw(data, None) or [reader.malformed(ValueError(
            "values nested deeper than a map may be (write spec and attributes flatter)"
        ))]) from None
    raw_problems = reader.raw(data, decoded)
    if raw_problems:
        raise UserError(raw_problems)
    if decoded is not None and reader.trusted(decoded):
        return decoded
    doc = _parse(data, reader)
    problems = reader.problems(doc)
    if problems:
        raise UserError(problems)
    try:
        supply = SupplyMap.from_json(doc)
    except (KeyError, TypeError, AttributeError, ValueError) as err:
        raise UserError([reader.malformed(err)]) from None
    return DecodedMap(supply, len(doc.get("entries", [])), doc)
