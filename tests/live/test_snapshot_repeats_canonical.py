"""A snapshot written as ``compiler.core.canonical`` writes maps is vouched for without the
scan for repeated keys (issue 23: the scan cost as much as decoding the map); one laid out
so but with a key given twice still gets the scan, and is refused (XCE718)."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.contract.supply_map import Entry, SupplyMap
from compiler.core import json_duplicates
from compiler.core.problems import UserError
from reconciler.live import load_live_snapshot
from reconciler.live import snapshot as snapshot_mod


def _canonical() -> bytes:
    host = Entry("host/cn01", "host", "available", "config", "controller",
                 attributes={"group": "g", "topology": {"rack": "r1"}},
                 spec={"since": 1.5}, owner="site/x")
    counter = Entry("counter/cpu@host/cn01", "counter", "available", "config", "controller",
                    location="host/cn01", amount=2**63, owner="site/x")
    return SupplyMap({e.id: e for e in (host, counter)}, site="x", owner="site/x",
                     generations={"controller": 3}).dumps()


def _scans(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every scan for repeats made from now on."""
    scanned: list[bytes] = []
    real = json_duplicates.duplicate_keys

    def spy(data: bytes, limit: int = 100) -> list[tuple[json_duplicates.JsonPath, str]]:
        scanned.append(data)
        return real(data, limit)

    monkeypatch.setattr(snapshot_mod, "duplicate_keys", spy)
    return scanned


def test_a_canonical_snapshot_loads_without_the_scan(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    scanned = _scans(monkeypatch)
    path = tmp_path / "live.json"
    path.write_bytes(_canonical())
    live = load_live_snapshot(path)
    assert scanned == [] and live.entries["host/cn01"].spec == {"since": 1.5}


@pytest.mark.parametrize("repeat", [
    (b'      "state": "available"\n', b'      "state": "lost",\n      "state": "available"\n'),
    (b'        "rack": "r1"\n', b'        "rack": "r9",\n        "rack": "r1"\n'),
    (b'  "owner": "site/x",\n', b'  "owner": "site/y",\n  "owner": "site/x",\n'),
])
def test_a_key_given_twice_in_the_canonical_layout_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repeat: tuple[bytes, bytes]) -> None:
    scanned = _scans(monkeypatch)
    once, twice = repeat
    data = _canonical()
    assert data.count(once) >= 1
    path = tmp_path / "live.json"
    path.write_bytes(data.replace(once, twice, 1))
    with pytest.raises(UserError) as caught:
        load_live_snapshot(path)
    assert [p.code for p in caught.value.problems] == ["XCE718"] and len(scanned) == 1


def test_another_layout_gets_the_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scanned = _scans(monkeypatch)
    path = tmp_path / "live.json"
    path.write_bytes(_canonical().replace(b"\n  ", b"\n   "))  # valid JSON, other indents
    assert set(load_live_snapshot(path).entries) == {"host/cn01", "counter/cpu@host/cn01"}
    assert len(scanned) == 1
