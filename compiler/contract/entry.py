"""What makes one supply-map entry valid: the one rule every reader of live entries applies.

Providers, built-in or external, and snapshot files may be buggy or hostile, and what
they report decides what the planner removes: a host whose state is no lifecycle word, an
id of another kind or with ``..`` in it, is not a fact about the cluster. The live gather
(``reconciler.live``), the snapshot reader and the controller map all call this module, so
the rule cannot drift between them (docs/architecture.md, "Entry ids and kinds").

Two forms, one rule: ``entry_errors`` checks a JSON object (types first), ``entry_error``
an ``Entry`` whose field types already hold (one decoded by msgspec, one a built-in made).
Both end in ``_content_errors``. The valid path stays a few lookups per entry: a live map
holds millions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from compiler.contract.supply_map import Entry
from compiler.contract.vocabulary import LIVE_STATES, OTHER_STATES
from compiler.core.names import (
    MAX_NAME_BYTES,
    TOPOLOGY_KEY,
    invisible_reason,
    path_unsafe_reason,
    shown,
    too_long_reason,
)

Errors = list[tuple[str | None, str]]  # (field, message); field None: the entry itself

# A kind is a lower-case word, or words joined by '-': ``host``, ``dataset-copy``.
KIND = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
# The compiler's limit on a name (compiler.core.names) holds for each name inside a live id,
# location or owner tag; an id holds at most a handful of names (a dataset copy: name,
# version, location kind and name), so 2,048 bytes bound a whole one.
MAX_ID_BYTES = 2048
_NAME_SEPARATORS = re.compile("[/@]")
# The usual id after its kind's '/': plain ASCII names joined by '/' and '@', none starting
# with '.' or '-'. Anything else takes the path that says which name is wrong and why.
_PLAIN_NAME = r"[A-Za-z0-9_][A-Za-z0-9_.+:=,~%-]*"
_PLAIN_NAMES = re.compile(f"{_PLAIN_NAME}(?:[/@]{_PLAIN_NAME})*")
_SURELY_SHORT = MAX_NAME_BYTES // 4  # this many characters fit in any UTF-8 byte limit
_INT64 = range(-(2**63), 2**64)  # the integers orjson reads as int (with unsigned 64 bits)
_REQUIRED = ("id", "kind", "state", "source")
_OPTIONAL_TEXT = ("provider", "location", "owner")
_OBJECTS = ("attributes", "spec")
_COMPOSED = frozenset({"id", "location", "owner"})  # names joined by '/' and '@'
TEXT_FIELDS = (*_REQUIRED, *_OPTIONAL_TEXT)
_MESSAGE_LIMIT = 60  # characters of a value a message quotes


def states_of(kind: str) -> frozenset[str]:
    """The states a live entry of ``kind`` may be in."""
    return LIVE_STATES.get(kind, OTHER_STATES)


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


def id_error(entry_id: str, kind: str) -> str | None:
    """Why ``entry_id`` is not an id of ``kind`` (``<kind>/<names>``, the names joined by
    '/' and '@', each a path-safe name: no '..', no control or invisible character), or
    None. The length limits are ``too_long``'s."""
    if not entry_id.startswith(kind + "/"):
        return f"id {shown(entry_id)} does not start with its kind '{kind}/'"
    start = len(kind) + 1
    if _PLAIN_NAMES.fullmatch(entry_id, start) is not None and ".." not in entry_id:
        return None
    for name in _NAME_SEPARATORS.split(entry_id[start:]):
        why = path_unsafe_reason(name)
        if why is not None:
            return (f"id {shown(entry_id)} holds a name that is not path-safe: {why} "
                    "(an id is '<kind>/<name>', names joined by '/' and '@')")
    return None


def _clipped(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _MESSAGE_LIMIT else text[:40] + f"… ({len(text)} characters)"


def segments_error(value: object, what: str) -> str | None:
    """What is wrong with a topology segment map (R5: an extensible map of keys to labels),
    or None. Keys are names such as ``rack`` or ``site.example/pod``; labels are printable
    and bounded like names. The protocol checks a request's segments with it too."""
    if not isinstance(value, Mapping) or not value:
        return f"{what} must be a non-empty object of topology keys, got {_clipped(value)}"
    for key, label in value.items():
        if not isinstance(key, str) or too_long_reason(key) or not TOPOLOGY_KEY.fullmatch(key):
            return (f"{what}: {_clipped(key)} is not a topology key (a name such as "
                    "'rack' or 'site.example/pod')")
        reason = None if isinstance(label, str) and label else "it is not a non-empty string"
        if reason is None:
            reason = too_long_reason(label) or invisible_reason(label)
        if reason is None and not label.isprintable():
            reason = "it contains a control character"
        if reason is not None:
            return f"{what}: the value of {_clipped(key)} is not a label: {reason}"
    return None


# The topology maps (R5) found valid: a site has few places (a rack, a switch), so each is
# checked once, not once per host; bounded, whatever a provider sends. The last one is
# kept apart: hosts come group by group, and one comparison is the cheapest test.
_PLACES_SEEN: set[tuple[tuple[str, str], ...]] = set()
_MAX_PLACES_SEEN = 4096
_LAST_PLACE: list[object] = [object()]  # equal to nothing until a place is seen


def topology_error(value: object) -> str | None:
    """What is wrong with an entry's ``attributes.topology`` (a segment map), or None."""
    if value == _LAST_PLACE[0]:
        return None
    if isinstance(value, dict):
        try:
            if tuple(value.items()) in _PLACES_SEEN:
                _LAST_PLACE[0] = value
                return None
        except TypeError:  # a value that no label is (a list)
            pass
    why = segments_error(value, "'attributes.topology'")
    if why is not None:
        return why
    assert isinstance(value, Mapping)
    if len(_PLACES_SEEN) >= _MAX_PLACES_SEEN:
        _PLACES_SEEN.clear()
    _PLACES_SEEN.add(tuple(value.items()))
    _LAST_PLACE[0] = value
    return None


def word_errors(entry_id: str, kind: str, state: str) -> Errors:
    """The kind, the state and the id against the contract: a kind is a word, the state one
    of its kind's (``states_of``), the id ``<kind>/<path-safe names>``."""
    if KIND.fullmatch(kind) is None:
        return [("kind", f"'kind' {shown(kind)} is not an entry kind (lower-case words joined "
                 "by '-', such as 'host' or 'dataset-copy')")]
    errs: Errors = []
    states = states_of(kind)
    if state not in states:
        errs.append(("state", f"'state' {shown(state)} is not a state of a {kind} entry "
                     f"(one of {', '.join(sorted(states))})"))
    why = id_error(entry_id, kind)
    if why is not None:
        errs.append(("id", why))
    return errs


def _empty_errors(texts: tuple[Any, ...]) -> Errors:
    """A required text field that is empty."""
    return [(key, f"'{key}' must be a non-empty string")
            for key, value in zip(_REQUIRED, texts, strict=False) if not value]


def _length_errors(texts: tuple[Any, ...]) -> Errors:
    """The text fields too long to be shown whole."""
    return [(key, why) for key, value in zip(TEXT_FIELDS, texts, strict=True)
            if value is not None and (why := too_long(key, value)) is not None]


def _topology_errors(topology: object) -> Errors:
    why = topology_error(topology)
    return [] if why is None else [("attributes", why)]


def _content_errors(texts: tuple[Any, ...], attributes: object) -> Errors:
    """The rule on the values of an entry whose field types hold: ``texts`` are the
    ``TEXT_FIELDS`` in order (optional ones may be None). Nothing else is said of an entry
    missing a required value, nor of a value that is not shown whole."""
    entry_id, kind, state, source = texts[:4]
    if not (entry_id and kind and state and source):
        return _empty_errors(texts)
    if max(map(len, filter(None, texts)), default=0) > _SURELY_SHORT:  # C loops: per entry
        longer = _length_errors(texts)  # the usual entry never gets here
        if longer:
            return longer
    errs: Errors = []
    if isinstance(attributes, Mapping) and "topology" in attributes:
        errs = _topology_errors(attributes["topology"])
    return errs + word_errors(entry_id, kind, state)


def _type_errors(doc: Mapping[str, Any]) -> Errors:
    get = doc.get
    errs: Errors = [(key, f"'{key}' must be a non-empty string") for key in _REQUIRED
                    if not isinstance(value := get(key), str) or not value]
    errs += [(key, f"'{key}' must be a string") for key in _OPTIONAL_TEXT
             if (value := get(key)) is not None and not isinstance(value, str)]
    amount = get("amount")
    if amount is not None and (not isinstance(amount, int) or isinstance(amount, bool)):
        errs.append(("amount", "'amount' must be an integer in base units"))
    errs += [(key, f"'{key}' must be an object") for key in _OBJECTS
             if (value := get(key)) is not None and not isinstance(value, Mapping)]
    return errs


def entry_errors(doc: object) -> Errors:
    """What is wrong with one entry object (JSON), as (field, message) pairs; empty when
    valid. Field types first: the values are judged only once they are of their types."""
    if not isinstance(doc, Mapping):
        return [(None, "entry is not an object")]
    errs = _type_errors(doc)
    if errs:
        return errs
    get = doc.get
    return _content_errors((get("id"), get("kind"), get("state"), get("source"),
                            get("provider"), get("location"), get("owner")),
                           get("attributes"))


def entry_error(entry: Entry) -> tuple[str | None, str] | None:
    """The first thing wrong with an ``Entry`` whose field types hold, or None: the same
    rule as ``entry_errors``. An integer beyond 64 bits is a float to orjson, so an error."""
    if entry.amount is not None and int(entry.amount) not in _INT64:  # int(): O(1) for subclasses
        return ("amount", "'amount' must be an integer in base units")
    errs = _content_errors((entry.id, entry.kind, entry.state, entry.source, entry.provider,
                            entry.location, entry.owner), entry.attributes)
    return errs[0] if errs else None
