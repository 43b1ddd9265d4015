"""A live-map snapshot that has drifted from a compiled desired map, for plan benchmarks.

Run: ``.venv/bin/python benchmarks/make_live.py build/supply-map.json live.json --drift 0.01``.

The result is what proxies would export (same JSON as ``supply-map.json``, readable by
``xce-plan --live``): every desired entry as observed (hosts carry the ``since`` their
agent reports), each provider at generation 1, then ``drift`` × entries changed, in three
equal parts: entries missing, entries whose amount differs, and extra entries config does
not know (discovered hosts, quotas and directories of departed users, retired dataset
copies, tagged instances nobody claims), each kind in proportion to its share of the map.
Seeded, so the same input gives the same bytes.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import orjson

from compiler.contract.supply_map import Entry, SupplyMap

JOINED_AGO = 86_400  # seconds before --now that live hosts joined


@dataclass(frozen=True, slots=True)
class Drift:
    missing: list[str]
    changed: list[str]
    extra: list[Entry]


def _extra_host(t: Entry, i: int, now: int) -> Entry:
    """A host that joined but is in no config (discovery decides)."""
    return replace(
        t,
        id=f"host/unknown{i:05d}",
        source="discovered",
        owner=None,
        attributes={},
        spec={"since": now - 3600},
    )


def _extra_quota(t: Entry, i: int, now: int) -> Entry:
    target, scope = t.id.split("/")[1], t.spec.get("scope", "user")
    return replace(
        t, id=f"quota/{target}/{scope}/gone{i:05d}", spec={**t.spec, "subject": f"gone{i:05d}"}
    )


def _extra_dir(t: Entry, i: int, now: int) -> Entry:
    volume = t.id.split("/")[1]
    root = str(t.spec.get("path", "")).rsplit("/", 1)[0]
    return replace(
        t,
        id=f"volume-dir/{volume}/gone{i:05d}",
        spec={**t.spec, "path": f"{root}/gone{i:05d}", "owner": f"gone{i:05d}"},
    )


def _extra_copy(t: Entry, i: int, now: int) -> Entry:
    dataset = f"retired-{i:05d}@1"
    return replace(
        t, id=f"dataset-copy/{dataset}@{t.location}", spec={**t.spec, "dataset": dataset}
    )


def _extra_instance(t: Entry, i: int, now: int) -> Entry:
    """Tagged with our owner, claimed by no entry (P5)."""
    return replace(
        t,
        id=f"instance/orphan{i:05d}",
        spec={**t.spec, "group": "unknown"},
        attributes={"group": "unknown"},
    )


EXTRAS: dict[str, Callable[[Entry, int, int], Entry]] = {
    "host": _extra_host,
    "quota": _extra_quota,
    "volume-dir": _extra_dir,
    "dataset-copy": _extra_copy,
    "instance": _extra_instance,
}


def observed(entry: Entry, now: int) -> Entry:
    """The entry as its provider reports it when nothing drifted."""
    if entry.kind == "host":
        return replace(entry, spec={**entry.spec, "since": now - JOINED_AGO})
    return entry


def pick_drift(desired: SupplyMap, fraction: float, rng: random.Random, now: int) -> Drift:
    ids = sorted(desired.entries)
    total = round(len(ids) * fraction)
    missing = rng.sample(ids, total // 3)
    gone = set(missing)
    # a dataset version is immutable (XCE790): its size never drifts, so leave it out
    with_amount = [i for i in ids if desired.entries[i].amount is not None and i not in gone
                   and desired.entries[i].kind != "dataset"]
    changed = rng.sample(with_amount, min(total // 3, len(with_amount)))
    # Extras are modelled on sampled entries, so each kind drifts in proportion to its size.
    models = [i for i in ids if desired.entries[i].kind in EXTRAS]
    n_extra = min(total - len(missing) - len(changed), len(models))
    extra = [
        EXTRAS[e.kind](e, n, now)
        for n, e in enumerate(desired.entries[i] for i in rng.sample(models, n_extra))
    ]
    return Drift(missing, changed, extra)


def make_live(desired: SupplyMap, fraction: float, seed: int, now: int) -> tuple[SupplyMap, Drift]:
    rng = random.Random(seed)
    drift = pick_drift(desired, fraction, rng, now)
    entries = {i: observed(e, now) for i, e in desired.entries.items()}
    for i in drift.missing:
        del entries[i]
    for n, i in enumerate(drift.changed):
        amount = entries[i].amount or 0
        entries[i] = replace(entries[i], amount=amount // 2 if n % 2 and amount > 1 else amount + 1)
    for e in drift.extra:
        entries[e.id] = e
    providers = sorted({e.provider for e in entries.values() if e.provider})
    live = SupplyMap(
        entries=entries,
        site=desired.site,
        owner=desired.owner,
        generations=dict.fromkeys(providers, 1),
    )
    return live, drift


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Write a drifted live map from a compiled map.")
    p.add_argument("compiled", type=Path, help="a compiled supply-map.json")
    p.add_argument("out", type=Path, help="the live-map JSON to write")
    p.add_argument("--drift", type=float, default=0.01, help="fraction of entries (0.01 = 1%%)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument(
        "--now",
        type=int,
        default=1_800_000_000,
        help="the snapshot's time (epoch seconds); hosts joined a day before",
    )
    args = p.parse_args(argv)
    if not 0 <= args.drift <= 1:
        p.error("--drift is a fraction between 0 and 1")
    try:
        desired = SupplyMap.from_json(orjson.loads(args.compiled.read_bytes()))
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError) as err:
        p.error(f"cannot read {args.compiled} as a supply map: {err}")
    live, drift = make_live(desired, args.drift, args.seed, args.now)
    args.out.write_bytes(live.dumps())
    print(
        f"wrote {args.out}: {len(live.entries):,} entries from {len(desired.entries):,} "
        f"desired; {len(drift.missing):,} missing, {len(drift.changed):,} changed amounts, "
        f"{len(drift.extra):,} extra"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
