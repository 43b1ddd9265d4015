"""Symlink races (issue 20 §6): the ``directory`` provider while someone swaps its folders
for symbolic links — during creates, deletes, evictions and quota runs — 0 escapes; and a
volume whose filesystem is not mounted (an empty mount point) — 0 writes.

The races are those of tests/providers/test_directory_races.py (its ``swapper`` and
``running``, its quota tool that logs what it reached), made many and aimed at every verb.
Outside the volume waits a decoy with the same names (users, job folders, a sentinel
file in each), so a call that followed a link would change the decoy: after each race the
decoy is exactly as it was. Each reply is ok or FAILED_PRECONDITION (a refusal).

``python -m tests.stress.fs_races --count 4000`` (calls under a race).
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path

from reconciler.protocol import ErrorCode, Reply
from tests.providers.directory_site import Site
from tests.providers.kit import inventory
from tests.providers.test_directory_races import QuotaRace, running, swapper, volume_of
from tests.stress.common import Figures, main, measured, rng_for

Race = Callable[[Figures, Path, int, random.Random], None]


def decoy(folder: Path, users: list[str], jobs: int = 0) -> dict[str, int]:
    """A tree outside the volume, with a sentinel in each folder; its listing."""
    for user in users:
        (folder / user).mkdir(parents=True, exist_ok=True)
        (folder / user / "sentinel").write_text("outside\n")
        for job in range(jobs):
            (folder / user / str(job) / "out").mkdir(parents=True, exist_ok=True)
            (folder / user / str(job) / "out" / "log").write_text("x")
    return listing(folder)


def listing(folder: Path) -> dict[str, int]:
    """Every path under ``folder`` and its mode: what an escape would change."""
    return {str(p.relative_to(folder)): p.lstat().st_mode for p in sorted(folder.rglob("*"))}


def judged(figures: Figures, name: str, reply: Reply) -> None:
    if reply.ok:
        figures.counts["calls done"] += 1
    elif reply.error is not None and reply.error.code is ErrorCode.FAILED_PRECONDITION:
        figures.counts["calls refused"] += 1
    else:
        figures.fail(name, f"neither done nor refused: {reply.to_json()}")


def untouched(figures: Figures, name: str, outside: Path, before: dict[str, int],
              site: Site) -> None:
    after = listing(outside)
    if after != before:
        changed = sorted(set(after.items()) ^ set(before.items()))
        figures.counts["escapes"] += 1
        figures.fail(name, f"the decoy outside the volume changed: {changed[:6]}")
    if not site.root.is_dir() or site.root.is_symlink():
        figures.fail(name, "the volume's top is not a folder after the race")
    figures.counts["races"] += 1


def create_race(figures: Figures, root: Path, calls: int, rng: random.Random) -> None:
    site = Site(root)
    outside = root / "outside"
    users = [f"u{i}" for i in range(calls)]
    before = decoy(outside, [])
    with running(swapper(site.root, outside)):
        for user in users:
            judged(figures, "create", site.request("create", entry={
                "id": f"volume-dir/shared/{user}", "spec": {"mode": "0700"}}))
    untouched(figures, "create race", outside, before, site)


def delete_race(figures: Figures, root: Path, calls: int, rng: random.Random) -> None:
    site = Site(root)
    outside = root / "outside"
    users = [f"u{i}" for i in range(calls)]
    for user in users:
        site.put(f"volume-dir/shared/{user}")
    before = decoy(outside, users)
    with running(swapper(site.root, outside)):
        for user in users:
            entry = {"id": f"volume-dir/shared/{user}"}
            judged(figures, "delete", site.request("delete", id=entry["id"], entry=entry,
                                                   destroy=True))
    untouched(figures, "delete race", outside, before, site)


def evict_race(figures: Figures, root: Path, calls: int, rng: random.Random) -> None:
    """Job folders evicted while their user's folder is swapped for a link to a decoy."""
    site = Site(root)
    jobs = max(1, calls)
    site.put("volume-dir/shared/victim")
    for job in range(jobs):
        (site.root / "victim" / str(job) / "out").mkdir(parents=True)
    outside = root / "outside"
    before = decoy(outside, ["victim"], jobs)
    seen = [e for e in inventory(site.t).values() if e["kind"] == "job-dir"]
    with running(swapper(site.root / "victim", outside / "victim")):
        for entry in seen:
            user, job = entry["id"].split("/")[2:]
            judged(figures, "evict", site.evict(user, job, entry))
    untouched(figures, "evict race", outside, before, site)


def quota_race(figures: Figures, root: Path, calls: int, rng: random.Random) -> None:
    """The quota tool only ever reaches the volume it was told (by device and inode)."""
    race = QuotaRace.made(root)
    site = race.site
    volume = volume_of(site.root)
    with running(swapper(site.root, race.outside)):
        for i in range(calls):
            judged(figures, "quota", site.request("create", entry={
                "id": f"quota/shared/user/u{i}", "amount": 1 << 20}))
    reached, elsewhere = race.reached(), race.elsewhere(volume)
    figures.counts["quota tool runs"] += len(reached)
    if elsewhere:
        figures.counts["escapes"] += len(elsewhere)
        figures.fail("quota race", f"{len(elsewhere)} of {len(reached)} runs left the volume")
    figures.counts["races"] += 1


def empty_mount(figures: Figures, root: Path, calls: int, rng: random.Random) -> None:
    """The volume's filesystem not mounted: its mount point is an empty folder, and every
    create, quota and evict is refused without writing into it."""
    site = Site(root)
    site.put("volume-dir/shared/alice")
    shutil.rmtree(site.root)
    site.root.mkdir()
    for i in range(calls):
        choice = rng.randrange(3)
        if choice == 0:
            reply = site.request("create", entry={"id": f"volume-dir/shared/n{i}"})
        elif choice == 1:
            reply = site.request("create", entry={"id": f"quota/shared/user/n{i}",
                                                  "amount": 1 << 20})
        else:
            reply = site.request("update", entry={"id": "volume-dir/shared/alice",
                                                  "spec": {"mode": "0750"}})
        figures.counts["calls on an empty mount point"] += 1
        if reply.ok and choice == 1:  # a ledger quota writes nothing; counted, reported
            figures.counts["quotas accepted on an empty mount point"] += 1
        elif reply.ok:
            figures.fail("empty mount point", f"call {i} done: {reply.to_json()}")
    written = os.listdir(site.root)
    if written:
        figures.counts["writes into an empty mount point"] += len(written)
        figures.fail("empty mount point", f"written into it: {sorted(written)[:6]}")
    figures.counts["races"] += 1


RACES: dict[str, Race] = {"create": create_race, "delete": delete_race, "evict": evict_race,
                          "quota": quota_race, "empty-mount": empty_mount}
CALLS_PER_RACE = 40


def run(count: int, seed: int, root: Path) -> Figures:
    """``count`` calls in all, at most ``CALLS_PER_RACE`` per race, the races in turn."""
    figures = Figures("fs-races", seed)
    calls = max(1, min(CALLS_PER_RACE, count // len(RACES)))
    with measured(figures):
        rounds = max(len(RACES), count // calls)
        for i in range(rounds):
            kind = list(RACES)[i % len(RACES)]
            folder = root / f"race-{i}"
            folder.mkdir()
            try:
                RACES[kind](figures, folder, calls, rng_for(seed, kind, i))
            except Exception as exc:
                figures.fail(f"{kind} race {i}", f"{type(exc).__name__}: {str(exc)[:800]}")
            shutil.rmtree(folder, ignore_errors=True)
    return figures


if __name__ == "__main__":
    main(run, 4000, __doc__ or "")
