"""A live-map snapshot that has drifted from a compiled desired map, for plan benchmarks.

Run: ``.venv/bin/python benchmarks/make_live.py build/supply-map.json live.json --drift 0.01``.

The result is what proxies would export (same JSON as ``supply-map.json``, readable by
``xce-plan --live``): every desired entry as observed (hosts carry the ``since`` their
agent reports), each provider at generation 1, then ``drift`` × entries changed, in three
equal parts: entries missing, entries whose amount differs, and extra entries config does
not know (discovered hosts, quotas and directories of departed users, retired dataset
copies, tagged instances nobody claims), each kind in proportion to its share of the map.
Seeded, so the same input gives the same bytes. It never holds the map (three passes over
the compiled file, ``benchmarks/map_stream.py``), so a million-host map of 1.3 GB is drifted
in under 1 GB of memory.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec
from map_stream import NotCanonical, iter_entries, read_entries, write_map

from compiler.contract.supply_map import SCHEMA_VERSION, Entry

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


class Head(msgspec.Struct):
    """The fields of an entry that choosing the drift reads (the others are skipped)."""

    id: str
    kind: str
    amount: int | None = None


@dataclass(frozen=True, slots=True)
class Scan:
    """What choosing the drift needs of the desired map, without its entries."""

    ids: list[str]  # in id order
    with_amount: bytearray  # 1 where the entry's amount may drift
    model: bytearray  # 1 where an extra can be modelled on the entry
    header: dict[str, Any]


def scan(compiled: Path) -> Scan:
    """One pass over the compiled map: ids in order, and which may drift how."""
    header, batches = read_entries(compiled, Head)
    ids: list[str] = []
    with_amount, model = bytearray(), bytearray()
    for batch in batches:
        for e in batch:
            if ids and e.id <= ids[-1]:
                raise NotCanonical(f"{compiled}: {e.id!r} is out of id order")
            ids.append(e.id)
            # a dataset version is immutable (XCE790): its size never drifts, so leave it out
            with_amount.append(e.amount is not None and e.kind != "dataset")
            model.append(e.kind in EXTRAS)
    return Scan(ids, with_amount, model, header)


def pick_drift(compiled: Path, fraction: float, rng: random.Random, now: int) -> tuple[Drift, Scan]:
    seen = scan(compiled)
    ids = seen.ids
    total = round(len(ids) * fraction)
    missing = rng.sample(ids, total // 3)
    gone = set(missing)
    with_amount = [i for i, ok in zip(ids, seen.with_amount, strict=True) if ok and i not in gone]
    changed = rng.sample(with_amount, min(total // 3, len(with_amount)))
    # Extras are modelled on sampled entries, so each kind drifts in proportion to its size.
    models = [i for i, ok in zip(ids, seen.model, strict=True) if ok]
    n_extra = min(total - len(missing) - len(changed), len(models))
    picked = rng.sample(models, n_extra)
    wanted = set(picked)
    found = {e.id: e for e in iter_entries(compiled) if e.id in wanted}
    extra = [EXTRAS[found[i].kind](found[i], n, now) for n, i in enumerate(picked)]
    return Drift(missing, changed, extra), seen


def drifted(entry: Entry, n: int) -> Entry:
    """The ``n``-th changed entry: every other one halved, the rest one more."""
    amount = entry.amount or 0
    return replace(entry, amount=amount // 2 if n % 2 and amount > 1 else amount + 1)


def live_entries(compiled: Path, drift: Drift, now: int) -> Iterator[Entry]:
    """The live map's entries in id order: the desired ones as observed, less the missing,
    with the changed amounts, and the extras in their places (an extra replaces an entry of
    its id)."""
    gone = set(drift.missing)
    changed = {i: n for n, i in enumerate(drift.changed)}
    extra = {e.id: e for e in drift.extra}
    pending = sorted(extra.values(), key=attrgetter("id"), reverse=True)
    for e in iter_entries(compiled):
        while pending and pending[-1].id <= e.id:
            yield pending.pop()
        if e.id in gone or e.id in extra:
            continue
        e = observed(e, now)
        yield drifted(e, changed[e.id]) if e.id in changed else e
    yield from reversed(pending)


def make_live(
    compiled: Path, out: Path, fraction: float, seed: int, now: int
) -> tuple[int, int, Drift]:
    """Write the live map; the number of its entries, of the desired ones, and the drift."""
    drift, seen = pick_drift(compiled, fraction, random.Random(seed), now)
    providers: set[str] = set()
    written = 0

    def counted() -> Iterator[Entry]:
        nonlocal written
        for e in live_entries(compiled, drift, now):
            written += 1
            if e.provider:
                providers.add(e.provider)
            yield e

    def fields() -> dict[str, Any]:
        doc: dict[str, Any] = {"schema": SCHEMA_VERSION, "site": seen.header.get("site", ""),
                               "owner": seen.header.get("owner", ""), "revision": None,
                               "settings": {}}
        if providers:
            doc["generations"] = dict.fromkeys(sorted(providers), 1)
        return doc

    write_map(out, {"dirty": False}, counted(), fields)
    return written, len(seen.ids), drift


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
        written, desired, drift = make_live(args.compiled, args.out, args.drift, args.seed,
                                            args.now)
    except (OSError, ValueError, msgspec.DecodeError) as err:  # NotCanonical is a ValueError
        p.error(f"cannot read {args.compiled} as a compiled supply map: {err}")
    print(
        f"wrote {args.out}: {written:,} entries from {desired:,} "
        f"desired; {len(drift.missing):,} missing, {len(drift.changed):,} changed amounts, "
        f"{len(drift.extra):,} extra"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
