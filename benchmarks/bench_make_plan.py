"""Micro benchmark of make_plan: ≥ 500,000 desired entries against a live map with 1 % drift.

Run: ``.venv/bin/python benchmarks/bench_make_plan.py [--entries N] [--drift F]``.
The planner alone, on maps built in memory, for quick turns on its rules; the figures of
the real ``xce-plan`` (files, loading, rendering, memory) come from ``bench_plan.py``.
Prints the time of make_plan, of its parts, and for comparison the time of a deepdiff of
the two whole maps, measured on a 20,000-entry slice and extrapolated linearly (deepdiff on
the whole map would take minutes; linear is optimistic for it, so the real gap is wider).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from deepdiff import DeepDiff

from compiler.contract.supply_map import Entry, SupplyMap
from reconciler.planner import make_plan

OWNER = "site/bench"
NOW = 1_800_000_000.0
SETTINGS = {"site": "bench", "owner": OWNER, "safety": {"max_changes": 1_000_000,
                                                         "max_delete_fraction": {"default": 1}}}


def _e(id_: str, kind: str, provider: str, **kw: object) -> Entry:
    return Entry(id=id_, kind=kind, state="available", source="config", provider=provider,
                 owner=OWNER, **kw)  # type: ignore[arg-type]


def synthetic_desired(target: int) -> dict[str, Entry]:
    """A site shaped like a big cluster: hosts with counters, user dirs with quotas, copies."""
    out: list[Entry] = []
    hosts = target // 7
    groups = 100
    for g in range(groups):
        out.append(_e(f"host-group/g{g}", "host-group", "ctl",
                      attributes={"hosts": f"cn[{g}]", "features": ["ib"], "mounts": ["home"]}))
    for h in range(hosts):
        name = f"cn{h:06d}"
        out.append(_e(f"host/{name}", "host", "ctl", spec={"join_deadline": 1800},
                      attributes={"group": f"g{h % groups}", "features": ["avx2", "ib"],
                                  "rack": f"r{h // 40}", "switch": f"s{h // 400}",
                                  "mounts": ["home"]}))
        for counter, amount in (("slots", 64), ("mem", 256 * 2**30), ("gpu", 0)):
            out.append(_e(f"counter/{counter}@host/{name}", "counter", "ctl",
                          location=f"host/{name}", amount=amount))
    users = (target - len(out)) // 2 - 500
    out.append(_e("volume/home", "volume", "fs", amount=2**50,
                  spec={"path": "/vol/home", "mode": "0755"}))
    for u in range(users):
        user = f"u{u:06d}"
        out.append(_e(f"volume-dir/home/{user}", "volume-dir", "fs",
                      spec={"path": f"/vol/home/{user}", "mode": "0700", "owner": user}))
        out.append(_e(f"quota/home/user/{user}", "quota", "fs", location="volume/home",
                      amount=100 * 2**30, spec={"scope": "user", "subject": user}))
    for d in range(100):
        out.append(_e(f"dataset/ds{d}@1", "dataset", "ctl", amount=2**40,
                      spec={"digest": f"sha256:{d:064x}"}))
        for g in range(5):
            out.append(_e(f"dataset-copy/ds{d}@1@group/g{g}", "dataset-copy", "cache",
                          location=f"group/g{g}", amount=2**40,
                          spec={"dataset": f"ds{d}@1", "digest": f"sha256:{d:064x}"}))
    return {e.id: e for e in out}


def synthetic_live(desired: dict[str, Entry], drift: float, seed: int = 7) -> dict[str, Entry]:
    """Independent copies of the desired entries (with observed keys) and ``drift`` changed."""
    rng = random.Random(seed)
    live: dict[str, Entry] = {}
    for e in desired.values():
        spec = {**e.spec, "since": NOW - 86_400} if e.kind == "host" else dict(e.spec)
        live[e.id] = replace(e, attributes=dict(e.attributes), spec=spec)
    ids = sorted(desired)
    for i, entry_id in enumerate(rng.sample(ids, int(len(ids) * drift))):
        e = live[entry_id]
        mode = i % 5
        if mode == 0:
            del live[entry_id]
        elif mode == 1:
            extra = replace(e, id=f"{entry_id}-old")
            live[extra.id] = extra
        elif mode == 2 and e.amount is not None:
            live[entry_id] = replace(e, amount=e.amount // 2)
        else:
            live[entry_id] = replace(e, attributes={**e.attributes, "rack": "moved"})
    return live


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entries", type=int, default=500_000)
    parser.add_argument("--drift", type=float, default=0.01)
    parser.add_argument("--slice", type=int, default=20_000)
    args = parser.parse_args()

    t0 = time.perf_counter()
    desired_entries = synthetic_desired(args.entries)
    live_entries = synthetic_live(desired_entries, args.drift)
    desired = SupplyMap(desired_entries, site="bench", owner=OWNER, revision="bench",
                        settings=SETTINGS)
    live = SupplyMap(live_entries, site="bench", owner=OWNER)
    print(f"built {len(desired_entries):,} desired / {len(live_entries):,} live entries "
          f"in {time.perf_counter() - t0:.1f}s")

    t = time.perf_counter()
    digest = desired.content_digest()
    digest_s = time.perf_counter() - t
    runs = []
    for _ in range(3):
        t = time.perf_counter()
        plan = make_plan(desired, live, now=NOW, destroy=True, desired_digest=digest)
        runs.append(time.perf_counter() - t)
    t = time.perf_counter()
    make_plan(desired, live, now=NOW, destroy=True)
    whole = time.perf_counter() - t
    print(f"make_plan: best {min(runs):.2f}s of {len(runs)} with the desired digest given; "
          f"{whole:.2f}s computing it too (the digest alone: {digest_s:.2f}s)")
    print(f"  {len(plan.actions):,} actions: add={plan.summary['add']} "
          f"change={plan.summary['change']} destroy={plan.summary['destroy']}")

    ids = sorted(desired_entries)[: args.slice]
    d_slice = {i: desired_entries[i].to_json() for i in ids}
    l_slice = {i: live_entries[i].to_json() for i in ids if i in live_entries}
    t = time.perf_counter()
    DeepDiff(d_slice, l_slice)
    dd = time.perf_counter() - t
    factor = len(desired_entries) / len(ids)
    print(f"deepdiff of whole maps: {dd:.2f}s for a {len(ids):,}-entry slice; extrapolated "
          f"linearly to {len(desired_entries):,} entries ≈ {dd * factor:.0f}s "
          f"(×{dd * factor / min(runs):.0f} make_plan)")


if __name__ == "__main__":
    main()
