"""A live snapshot read against the desired map (issue 23, "decode only what differs"): an
entry written with the same bytes as a desired entry is that entry, neither decoded nor
checked again; every other entry is decoded and held to the contract, and keys given twice
are still refused (XCE718). The map is the one the plain read gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.contract.entry import entry_error
from compiler.contract.supply_map import Entry, KnownEntries, SupplyMap, decode_map
from compiler.core.bundled import example_site_dir
from compiler.core.problems import UserError
from reconciler.live import load_live_snapshot

OWNER = "site/x"


def _host(name: str, since: int | None = None, state: str = "available") -> Entry:
    return Entry(f"host/{name}", "host", state, "config", "controller",
                 attributes={"group": "g", "topology": {"rack": "r1"}},
                 spec={"join_deadline": 60} | ({} if since is None else {"since": since}),
                 owner=OWNER)


def _counter(name: str, amount: int) -> Entry:
    return Entry(f"counter/cpu@host/{name}", "counter", "available", "config", "controller",
                 location=f"host/{name}", amount=amount, owner=OWNER)


def _map(*entries: Entry) -> SupplyMap:
    return SupplyMap({e.id: e for e in entries}, site="x", owner=OWNER,
                     generations={"controller": 1})


def _known(desired: SupplyMap) -> tuple[SupplyMap, KnownEntries]:
    decoded = decode_map(desired.dumps(), index=True)
    assert decoded is not None and decoded.known is not None
    return decoded.supply, decoded.known


DESIRED = _map(_host("cn01"), _host("cn02"), _counter("cn01", 4), _counter("cn02", 4))


def test_shared_entries_are_the_desired_ones_and_the_map_is_the_plain_one(
        tmp_path: Path) -> None:
    desired, known = _known(DESIRED)
    live = _map(_host("cn01", since=5), _host("cn02"), _counter("cn01", 8), _counter("cn02", 4),
                _counter("cn03", 2))
    path = tmp_path / "live.json"
    path.write_bytes(live.dumps())
    against = load_live_snapshot(path, known)
    assert against == load_live_snapshot(path) == live
    shared = {i for i, e in against.entries.items() if e is desired.entries.get(i)}
    assert shared == {"host/cn02", "counter/cpu@host/cn02"}


@pytest.mark.parametrize("bad", [_host("cn01", state="exploded"), _host("..")])
def test_an_entry_that_differs_is_held_to_the_contract(tmp_path: Path, bad: Entry) -> None:
    _, known = _known(DESIRED)
    path = tmp_path / "live.json"
    path.write_bytes(_map(bad, _host("cn02"), _counter("cn02", 4)).dumps())
    with pytest.raises(UserError) as caught:
        load_live_snapshot(path, known)
    assert [p.code for p in caught.value.problems] == ["XCE709"]


@pytest.mark.parametrize(("once", "twice"), [
    (b'      "state": "available"\n    },\n    {\n      "amount": 2,',  # in a fresh entry
     b'      "state": "lost",\n      "state": "available"\n    },\n    {\n      "amount": 2,'),
    (b'  "site": "x"\n', b'  "site": "y",\n  "site": "x"\n'),  # at the top level
])
def test_keys_given_twice_are_refused_against_the_desired_map(
        tmp_path: Path, once: bytes, twice: bytes) -> None:
    _, known = _known(DESIRED)
    data = _map(_host("cn01"), _counter("cn02", 4), _counter("cn03", 2)).dumps()
    assert data.count(once) == 1
    path = tmp_path / "live.json"
    path.write_bytes(data.replace(once, twice))
    with pytest.raises(UserError) as caught:
        load_live_snapshot(path, known)
    assert [p.code for p in caught.value.problems] == ["XCE718"]


def test_a_shared_entry_repeating_a_key_is_the_desired_entry_itself(tmp_path: Path) -> None:
    """The bytes are the desired map's own: read either way, both maps say the same."""
    text = _map(_host("cn01")).dumps()
    once = b'      "state": "available"\n'
    doubled = text.replace(once, b'      "state": "lost",\n' + once)
    desired_file = tmp_path / "desired.json"
    desired_file.write_bytes(doubled)
    decoded = decode_map(doubled, index=True)
    assert decoded is not None and decoded.known is not None
    path = tmp_path / "live.json"
    path.write_bytes(doubled)
    live = load_live_snapshot(path, decoded.known)
    assert live.entries["host/cn01"] is decoded.supply.entries["host/cn01"]
    with pytest.raises(UserError):  # read alone, the snapshot is refused as before
        load_live_snapshot(path)


def test_every_entry_xce_compile_writes_obeys_the_live_contract() -> None:
    """Why a live entry with a desired entry's bytes need not be checked (snapshot._fresh):
    the compiler writes only entries the live-entry rule accepts."""
    from compiler.compile import compile_site
    from compiler.core.problems import Problems

    compiled, _ = compile_site(example_site_dir(), Problems())
    assert compiled is not None
    entries = compiled.supply_map.entries.values()
    assert len(entries) > 3000
    assert [(e.id, entry_error(e)) for e in entries if entry_error(e) is not None] == []
