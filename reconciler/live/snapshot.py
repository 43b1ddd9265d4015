"""A live map saved to a file (``xce-plan --live FILE``): read as proxies exported it, every
entry held to the contract (``compiler.contract.entry``) as a provider's report is.

Well-typed files take ``decode_map``'s fast path, checked entry by entry with the same
rule; anything else goes the general path, which names file, entry and field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from compiler.contract.entry import entry_error, entry_errors
from compiler.contract.supply_map import (
    SCHEMA_VERSION,
    DecodedMap,
    Entry,
    KnownEntries,
    MapReader,
    SupplyMap,
    read_map,
    session_error,
)
from compiler.core.canonical import dumps
from compiler.core.json_duplicates import JsonPath, duplicate_keys, has_repeats
from compiler.core.problems import Problem, Where
from reconciler.live.codes import (
    HINTS,
    SNAPSHOT_NEWER,
    SNAPSHOT_NOT_JSON,
    SNAPSHOT_OTHER_SITE,
    SNAPSHOT_REPEATS,
    SNAPSHOT_SHAPE,
    SNAPSHOT_UNREADABLE,
)
from reconciler.live.gather import is_generation

MAX_SNAPSHOT_PROBLEMS = 100


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


def _is_session(value: object) -> bool:
    return session_error(value) is None


# What the planner reads from each provider: why it did not report, and its generation
# (the empty-inventory guard tells a new provider by it); why single entries are unknown;
# and since when it serves its session (the settle window).
_PER_PROVIDER = (("unknown", _is_reason, "a reason (a string)"),
                 ("generations", is_generation, "a whole number ≥ 0"),
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


def _trusted(decoded: DecodedMap, file: str) -> bool:
    """Whether a snapshot ``decode_map`` made is the map as it stands (twice as fast, a third
    of the memory), or needs the general path, which says what is wrong. The entries are
    held to the one rule (``entry_error``), as the general path holds them: those decoded
    from the snapshot's own bytes; not those it shares, byte for byte, with the desired map
    (``_fresh``)."""
    entries = decoded.supply.entries
    header = decoded.header
    return not (decoded.listed != len(entries) or _schema_problem(header, file) is not None
                or _field_problems(header, file)
                or any(map(entry_error, _fresh(decoded))))  # an error: a non-empty tuple


def _fresh(decoded: DecodedMap) -> Iterable[Entry]:
    """The entries of a snapshot that its reader must check: all of them, but those whose
    bytes are those of a desired entry when it was read against the desired map.

    Such an entry is the desired entry itself (the same bytes decode to an equal entry), and
    checking it again would only ask whether the config obeys the live-entry contract:
    xce-compile writes only entries that do (kinds and states of the vocabulary, ids and
    locations of names it checked itself, stricter than ``entry_error``; tests/live/
    test_snapshot_against_desired.py holds every compiled entry to the rule), and a desired
    map written otherwise is the site's own word, which the plan acts on anyway. The contract
    guards the plan against what a provider or an export makes up, and an entry that says
    byte for byte what the config says makes up nothing: the planner finds it in sync, and a
    rule that reads it reads what the config states. Keys given twice follow the same rule
    (``_repeats_ruled_out``): read either way, the same bytes say the same in both maps."""
    against = decoded.against
    return decoded.supply.entries.values() if against is None else against.fresh


def _listed(problems: list[Problem], file: str) -> list[Problem]:
    """At most MAX_SNAPSHOT_PROBLEMS of ``problems``, and how many more there are."""
    listed = problems[:MAX_SNAPSHOT_PROBLEMS]
    if len(problems) > len(listed):
        listed.append(Problem(SNAPSHOT_SHAPE, f"… and {len(problems) - len(listed)} more problems",
                              "", Where(file)))
    return listed


def snapshot_problems(doc: Any, file: str) -> list[Problem]:
    """Every problem of a live map document (the general path), at most
    MAX_SNAPSHOT_PROBLEMS of them."""
    return _listed(_snapshot_problems(doc, file), file)


def _repeat_problem(file: str, path: JsonPath, key: str) -> Problem:
    inside = f"entry #{path[1]}" if path[:1] == ("entries",) and len(path) > 1 else "the map"
    field = ".".join(str(p) for p in path[2:]) if inside != "the map" else ".".join(
        str(p) for p in path)
    of = f" of {field}" if field else ""
    return HINTS.problem(SNAPSHOT_REPEATS, f"{inside}: the key {key!r}{of} is given more than "
                         "once", where=Where(file, (*path, key)))


def repeat_problems(data: bytes, file: str, decoded: DecodedMap | None = None) -> list[Problem]:
    """Keys a live map's objects give more than once (XCE718), at most
    MAX_SNAPSHOT_PROBLEMS of them: read one way, they would say what the file does not.
    ``decoded``: what ``decode_map`` made of ``data``, when it could (``_repeats_ruled_out``)."""
    if decoded is not None and _repeats_ruled_out(data, decoded):
        return []
    return [_repeat_problem(file, path, key)
            for path, key in duplicate_keys(data, MAX_SNAPSHOT_PROBLEMS)]


def _repeats_ruled_out(data: bytes, decoded: DecodedMap) -> bool:
    """Whether no key can be given twice where it matters, shown without the scan for
    repeats (which costs as much as decoding the map): ``data`` is, byte for byte, what
    ``compiler.core.canonical`` writes of the map ``decode_map`` made of it, as xce-compile,
    make_live and ``SupplyMap.dumps`` write maps. That is JSON written from dicts, where no
    object gives a key twice: a key given twice would have been read once, and the bytes
    written again would differ. Read against the desired map, the entries it shares are
    left as they are (``_fresh`` says why) and only the others are written again."""
    entries = decoded.supply.entries
    if decoded.listed != len(entries):  # an id given twice: the map is not the whole file
        return False
    against = decoded.against
    if against is None:
        return _encoded(decoded.header, entries.values()) == data
    return _framed(data, decoded.header, against.raws) and (
        _framed(_encoded({}, against.fresh), {}, against.fresh_raws)
        or not has_repeats(b"[" + b",".join(against.fresh_raws) + b"]"))


# How canonical JSON writes a map's top-level ``entries`` list: its key, what comes before
# the first item, between two and after the last.
_ENTRIES_KEY = b'\n  "entries": '
_OPEN, _BETWEEN, _CLOSE = b"[\n    ", b",\n    ", b"\n  ]"


def _encoded(header: Mapping[str, Any], entries: Iterable[Entry]) -> bytes:
    """The canonical bytes of a map file of ``header`` and ``entries`` (none when orjson
    cannot write it: an integer beyond 64 bits)."""
    try:
        return dumps({**header, "entries": [e.to_json() for e in entries]})
    except TypeError:  # orjson's JSONEncodeError
        return b""


def _framed(data: bytes, header: Mapping[str, Any], raws: list[msgspec.Raw]) -> bool:
    """Whether ``data`` is the canonical bytes of a map file of ``header`` whose entries
    are written as ``raws`` (each compared where it must stand, as a copy of a large file
    would cost more than the comparing)."""
    head, key, tail = _encoded(header, ()).partition(_ENTRIES_KEY + b"[]")
    if not key or not raws:
        return bool(key) and data == head + key + tail
    at = data.startswith
    pos = len(head) + len(_ENTRIES_KEY) + len(_OPEN)
    if not at(head + _ENTRIES_KEY + _OPEN):
        return False
    *items, last = raws
    for raw in items:
        if not (at(raw, pos) and at(_BETWEEN, pos + len(raw))):
            return False
        pos += len(raw) + len(_BETWEEN)
    end = pos + len(last)
    return (at(last, pos) and at(_CLOSE + tail, end)
            and end + len(_CLOSE) + len(tail) == len(data))


def _snapshot_reader(file: str) -> MapReader:
    return MapReader(
        unreadable=lambda err: HINTS.problem(
            SNAPSHOT_UNREADABLE, f"cannot read live map: {err.strerror}", where=Where(file)),
        not_json=lambda err: Problem(SNAPSHOT_NOT_JSON, f"live map is not valid JSON: {err.msg}",
                                     "", Where(file, line=err.lineno, column=err.colno)),
        malformed=lambda err: Problem(SNAPSHOT_SHAPE, f"not a live map ({err})", "",
                                      Where(file)),
        problems=lambda doc: snapshot_problems(doc, file),
        trusted=lambda decoded: _trusted(decoded, file),
        raw=lambda data, decoded: repeat_problems(data, file, decoded),
    )


def load_live_snapshot(path: Path, desired: KnownEntries | None = None) -> SupplyMap:
    """A live map saved to a file; any problem with it raises UserError naming the file.
    With the ``desired`` map's entries by their bytes, an entry the snapshot writes with the
    same bytes is that entry, neither decoded nor checked again (``_fresh``)."""
    return read_map(path, _snapshot_reader(str(path)), known=desired).supply


def _owners_of_desired(live: SupplyMap, desired: SupplyMap) -> tuple[bool, set[str]]:
    """Whether a live entry of a desired id carries ``desired``'s owner tag, and if none
    does, which other owner tags those entries carry. The first such entry answers: in a
    snapshot of this site, it is the first entry of all."""
    others = set()
    for entry_id, entry in live.entries.items():
        if entry_id not in desired.entries:
            continue
        if entry.owner == desired.owner:
            return True, set()
        if entry.owner:
            others.add(entry.owner)
    return False, others


def other_site_problem(live: SupplyMap, desired: SupplyMap, file: str) -> Problem | None:
    """A snapshot exported for another site (XCE719): its header names another owner tag, or
    the entries it shares with this config are all owned by others. Planned, every such
    entry would be "co-managed, left alone" and the plan would say nothing is to change."""
    if live.owner and desired.owner and live.owner != desired.owner:
        return HINTS.problem(SNAPSHOT_OTHER_SITE, f"the live map was exported for {live.owner}; "
                             f"this site's owner tag is {desired.owner}",
                             where=Where(file, ("owner",)))
    ours, others = _owners_of_desired(live, desired)
    if ours or not others:
        return None
    named = ", ".join(sorted(others)[:3]) + (" …" if len(others) > 3 else "")
    return HINTS.problem(SNAPSHOT_OTHER_SITE, "every entry of the live map that this config "
                         f"names is owned by another site ({named}), none by {desired.owner}",
                         where=Where(file))
