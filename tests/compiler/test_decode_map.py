"""``decode_map`` is a faster way to read a map file: it must give what the general path gives."""

from __future__ import annotations

import json
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.contract.supply_map import Entry, SupplyMap, decode_map

# Integers orjson reads as int; beyond them it reads floats (see decode_map).
_int = st.integers(min_value=-(2**63), max_value=2**64 - 1)
_scalar = st.one_of(st.none(), st.booleans(), _int, st.floats(allow_nan=False,
                    allow_infinity=False), st.text(max_size=5))
json_values = st.recursive(_scalar, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    max_leaves=6)
_name = st.one_of(st.sampled_from(["host", "counter", "ctl", "a/b"]), st.text(min_size=1,
                                                                             max_size=4))
_text = st.one_of(_name, st.just(""))
_OPTIONAL = {
    "provider": st.none() | _text, "location": st.none() | _text, "owner": st.none() | _text,
    "amount": st.none() | _int,
    "attributes": st.dictionaries(st.text(max_size=3), json_values, max_size=3),
    "spec": st.dictionaries(st.text(max_size=3), json_values, max_size=3),
    "extra": json_values,
}
# Entries as a live snapshot wants them (the id is <kind>/<name>) ...
valid_entries = st.builds(
    lambda kind, name, state, source, rest: {"id": f"{kind}/{name}", "kind": kind,
                                             "state": state, "source": source, **rest},
    _name, _text, _name, _name, st.fixed_dictionaries({}, optional=_OPTIONAL))
# ... then with one field dropped or of another JSON type, or no entry at all.
_FIELDS = ("id", "kind", "state", "source", *_OPTIONAL)
entry_docs = st.one_of(
    valid_entries,
    st.tuples(valid_entries, st.sampled_from(_FIELDS), st.none() | _text | json_values).map(
        lambda t: {**t[0], t[1]: t[2]} if t[2] is not None else
        {k: v for k, v in t[0].items() if k != t[1]}),
    json_values,
)
_HEADER = {k: json_values for k in ("schema", "site", "owner", "revision", "dirty", "digest",
                               "settings", "unknown", "generations")}
_map = st.fixed_dictionaries({"entries": st.lists(entry_docs, max_size=4)}, optional=_HEADER)
map_docs = st.one_of(
    _map,
    _map,
    st.fixed_dictionaries({}, optional={**_HEADER, "entries": json_values, "other": json_values}),
    json_values,
)


def _general(data: bytes) -> SupplyMap | None:
    """The general path: orjson, then ``SupplyMap.from_json``; None where it raises."""
    try:
        return SupplyMap.from_json(orjson.loads(data))
    except (KeyError, TypeError, AttributeError, ValueError):
        return None


@settings(max_examples=500, deadline=None)
@given(map_docs, st.booleans())
def test_decode_map_gives_what_the_general_path_gives(doc: Any, compact: bool) -> None:
    data = json.dumps(doc, separators=(",", ":") if compact else None).encode()
    decoded = decode_map(data)
    if decoded is None:
        return  # the caller takes the general path
    assert decoded.supply == _general(data)
    assert decoded.listed == len(doc["entries"])
    assert dict(decoded.header) == {k: v for k, v in doc.items() if k != "entries"}


def test_decode_map_reads_a_written_map_and_declines_other_json() -> None:
    entry = Entry("counter/gpu@host/a", "counter", "available", "config", "ctl", "host/a", 8,
                  {"features": ["a100"]}, {"provider": "cache"}, "site/x")
    written = SupplyMap({entry.id: entry}, site="x", owner="site/x", revision="abc",
                        settings={"discovery": "admit"}, generations={"ctl": 3})
    decoded = decode_map(written.dumps())
    assert decoded is not None and decoded.supply == written
    assert decoded.header["digest"] == written.content_digest()
    assert decode_map(b"[]") is None
    assert decode_map(b'{"entries": [], "surprise": 1}') is None  # unknown top-level field
    assert decode_map(b'{"entries": [{"id": "a/b", "kind": "a", "state": "s", "source": "c",'
                      b' "amount": true}]}') is None  # a bool is not an amount
