"""A map file over ``LEAN_BYTES`` is decoded a batch at a time with its repeated values
shared: the same map as the whole decode and the general path, with less memory."""

from __future__ import annotations

import pytest

import compiler.contract.supply_map as supply_map
from compiler.contract.supply_map import EMPTY, Entry, SupplyMap, decode_map


def _map(n: int) -> SupplyMap:
    entries = {}
    for i in range(n):
        host = f"host/cn{i:05d}"
        entries[host] = Entry(host, "host", "available", "config", "controller",
                              attributes={"group": f"g{i % 7}", "features": ["a", "b"]},
                              spec={"join_deadline": 1800}, owner="site/s")
        counter = f"counter/gpu@{host}"
        entries[counter] = Entry(counter, "counter", "present", "config", "controller",
                                 location=host, amount=i, owner="site/s")
    return SupplyMap(entries=entries, site="s", owner="site/s", generations={"controller": 1})


@pytest.mark.parametrize("n", [0, 1, supply_map.BATCH + 3])
def test_lean_decode_gives_the_same_map(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    data = _map(n).dumps()
    whole = decode_map(data)
    monkeypatch.setattr(supply_map, "LEAN_BYTES", 0)
    lean = decode_map(data)
    assert whole is not None and lean is not None
    assert lean.supply == whole.supply == _map(n)
    assert (lean.listed, lean.header) == (whole.listed, whole.header)
    assert list(lean.supply.entries) == list(whole.supply.entries)


def test_lean_decode_shares_repeated_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(supply_map, "LEAN_BYTES", 0)
    decoded = decode_map(_map(supply_map.BATCH + 3).dumps())
    assert decoded is not None
    entries = list(decoded.supply.entries.values())
    assert len({id(e.kind) for e in entries}) == 2
    assert len({id(e.owner) for e in entries}) == 1
    counters = [e for e in entries if e.kind == "counter"]
    assert all(e.attributes is EMPTY and e.spec is EMPTY for e in counters)


def test_lean_decode_refuses_what_the_whole_decode_refuses(
        monkeypatch: pytest.MonkeyPatch) -> None:
    bad = _map(3).dumps().replace(b'"amount": 1,', b'"amount": "1",')
    assert decode_map(bad) is None
    monkeypatch.setattr(supply_map, "LEAN_BYTES", 0)
    assert decode_map(bad) is None
    assert decode_map(b'{"entries": [1') is None
