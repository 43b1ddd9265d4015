"""Scale: a 200,000-entry map answers inventory in one snapshot; timings printed, not asserted."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from compiler.contract.provider_params import ControllerMapParams
from compiler.contract.supply_map import Entry
from reconciler.providers.controller_map.jobs import JobEvent, record_jobs
from reconciler.providers.controller_map.lifecycle import Event
from reconciler.providers.controller_map.provider import ControllerMapProvider
from reconciler.providers.controller_map.reporter import record
from tests.controller_map.cmap import OWNER, T0, counter, host, ok

HOSTS = 100_000  # plus one counter each: 200,000 entries
JOBS = 20_000


def test_inventory_of_200k_entries(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = ControllerMapProvider("controller", ControllerMapParams(), tmp_path)
    names = [f"cn{i:06d}" for i in range(HOSTS)]
    started = time.perf_counter()
    with p.store.change() as tx:  # seeding as a bulk load would; the map's own write path
        tx.put(Entry.from_json(host(n) | {"state": "available"}) for n in names)
        tx.put(Entry.from_json(counter("slots", f"host/{n}", 64)) for n in names)
        tx.bump_generation()
    seeded = time.perf_counter() - started

    started = time.perf_counter()
    report = record(p.store, Event.JOIN, [f"new{i:05d}" for i in range(20_000)], T0, p.name)
    joined = time.perf_counter() - started

    started = time.perf_counter()
    jobs = [str(5_000_000 + i) for i in range(JOBS)]
    record_jobs(p.store, JobEvent.START, jobs, T0, p.name, user="alice")
    job_batch = time.perf_counter() - started

    started = time.perf_counter()
    for i in range(1_000):
        ok(p, "create", entry=counter("gpu", f"host/cn{i:06d}", 4))
    created = time.perf_counter() - started

    started = time.perf_counter()
    inventory = ok(p, "inventory")
    listed = time.perf_counter() - started

    entries = inventory["entries"]
    assert len(entries) == 2 * HOSTS + 20_000 + JOBS + 1_000
    ids = [e["id"] for e in entries]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert inventory["generation"] == 1 + 1 + 1 + 1_000
    assert len(report.moved) == 20_000
    assert entries[0]["owner"] == OWNER
    with capsys.disabled():
        print(
            f"\ncontroller map, {len(entries)} entries: seed {2 * HOSTS} in {seeded:.2f}s, "
            f"reporter join of 20,000 in {joined:.2f}s, {JOBS:,} job starts in "
            f"{job_batch:.2f}s, 1,000 creates in {created:.2f}s "
            f"({1_000 / created:.0f}/s), inventory in {listed:.2f}s"
        )
    p.close()
