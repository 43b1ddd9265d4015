"""The gate's inputs, made once and kept in a cache folder: a site, its map, and live maps.

Making them is not what the gate measures, and at 20,000 hosts it takes several seconds, so
they are kept (``.xce-bench/`` under the repository, git-ignored, or ``$XCE_BENCH_DIR``) and
made again only when what makes them changes: the site when the generators' code (every
``benchmarks/*.py`` but the benchmarks ``bench_*`` and the gate's own modules: ``gen_site.py``,
``make_live.py`` and what they import), this module or the shape does; the live maps when that
code or the compiled map's digest does. The generators run as their own scripts, as a person
runs them. The compiled map itself is made on every run, untimed, because it is the product's own
output: a compiler that writes another map must be measured against its own. That compile
also loads the product's modules before anything is timed.

The site is a git repository of its own with one commit (fixed author and dates), so the
compile's revision step does the same work wherever the cache folder is, inside the
project's repository or outside any.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import orjson

from compiler.cmds.compile import main as compile_main
from compiler.contract.build_files import SUPPLY_MAP
from compiler.contract.supply_map import SupplyMap, decode_map

HERE = Path(__file__).resolve().parent
NOW = 1_800_000_000  # the live maps' snapshot time, and the time the plans are made for
AS_OF = datetime.fromtimestamp(NOW, UTC).strftime("%Y-%m-%dT%H:%M:%S")
# live map name -> make_live's --drift; "empty" (every provider reports nothing) is made here
DRIFTS = {"1pct": 0.01, "unchanged": 0.0, "100pct": 1.0}
EMPTY = "empty"
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "xce bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
    "GIT_COMMITTER_NAME": "xce bench", "GIT_COMMITTER_EMAIL": "bench@localhost",
    "GIT_AUTHOR_DATE": f"{NOW} +0000", "GIT_COMMITTER_DATE": f"{NOW} +0000",
}


@dataclass(frozen=True, slots=True)
class Inputs:
    """Where a run finds its inputs and writes what the product writes."""

    site: Path
    desired: Path  # the compiled supply-map.json of this run (bindings.json beside it)
    lives: dict[str, Path]  # "1pct", "unchanged", "100pct", "empty"
    out: Path  # the timed compiles' --out
    workdir: Path  # the plans' --workdir (no state store in it)
    entries: int


class InputError(Exception):
    """An input could not be made (the generator refused the shape, the site did not compile)."""


def shape_for(hosts: int) -> dict[str, int]:
    """gen_site.py's options at ``hosts`` hosts, in the proportions of the sites measured in
    docs/performance.md: a group per 200 hosts, a user per 10, a dataset per 100, 5 copies
    (fewer on a site of fewer than 10 groups)."""
    groups = max(2, hosts // 200)
    return {"hosts": hosts, "groups": groups, "users": max(1, hosts // 10),
            "datasets": max(1, hosts // 100), "copies": min(5, max(1, groups // 2))}


def _generators() -> list[Path]:
    return sorted(p for p in HERE.glob("*.py")
                  if not p.name.startswith(("bench_", "gate")) or p == Path(__file__).resolve())


def _key(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in (*(p.read_bytes() for p in _generators()), *parts):
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()


def _script(name: str, *argv: str) -> None:
    done = subprocess.run([sys.executable, str(HERE / name), *argv], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise InputError(f"benchmarks/{name} {' '.join(argv)} exited {done.returncode}:\n"
                         f"{done.stderr}")


def _fresh(folder: Path, key: str, make: Callable[[Path], None]) -> None:
    """``folder`` as ``make`` writes it, made again unless its key file holds ``key``; the
    key is written last, so a run stopped half-way makes it again."""
    stamp = folder / "key"
    if stamp.is_file() and stamp.read_text() == key:
        return
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    make(folder)
    stamp.write_text(key)


def _quiet(main: Callable[[list[str]], int], argv: list[str]) -> None:
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
        code = main(argv)
    if code != 0:
        raise InputError(f"{main.__module__} {' '.join(argv)} exited {code}")


def _make_site(folder: Path, shape: dict[str, int]) -> None:
    site = folder / "site-config"
    _script("gen_site.py", *(f"--{k}={v}" for k, v in shape.items()), str(site))
    env = {**os.environ, **_GIT_ENV}
    for argv in (["init", "-q"], ["add", "-A"], ["-c", "commit.gpgsign=false", "commit", "-q",
                                                   "-m", "generated site"]):
        subprocess.run(["git", *argv], cwd=site, env=env, check=True, capture_output=True)


def _empty_live(desired: Path, out: Path) -> None:
    """Every provider of the desired map reports, and has nothing: a site not yet applied."""
    decoded = decode_map(desired.read_bytes())
    if decoded is None:
        raise InputError(f"{desired} is not a well-typed map")
    supply = decoded.supply
    providers = sorted({e.provider for e in supply.entries.values() if e.provider})
    empty = SupplyMap(entries={}, site=supply.site, owner=supply.owner,
                      generations=dict.fromkeys(providers, 1))
    out.write_bytes(empty.dumps())


def _make_lives(folder: Path, desired: Path) -> None:
    for name, drift in DRIFTS.items():
        _script("make_live.py", str(desired), str(folder / f"{name}.json"), "--drift", str(drift),
                "--now", str(NOW))
    _empty_live(desired, folder / f"{EMPTY}.json")


def prepare(cache: Path, hosts: int) -> Inputs:
    """The inputs of a run at ``hosts`` hosts, made or reused under ``cache``."""
    base = cache / f"hosts-{hosts}"
    shape = shape_for(hosts)
    _fresh(base / "site", _key(orjson.dumps(shape)),
           lambda folder: _make_site(folder, shape))
    site, build = base / "site" / "site-config", base / "build"
    shutil.rmtree(build, ignore_errors=True)
    _quiet(compile_main, [str(site), "--out", str(build)])
    desired = build / SUPPLY_MAP
    doc = orjson.loads(desired.read_bytes())
    digest = str(doc["digest"]).encode()  # entries and settings; not the revision
    _fresh(base / "live", _key(digest),
           lambda folder: _make_lives(folder, desired))
    names = [*DRIFTS, EMPTY]
    (base / "work").mkdir(exist_ok=True)
    return Inputs(site=site, desired=desired,
                  lives={n: base / "live" / f"{n}.json" for n in names},
                  out=base / "out", workdir=base / "work", entries=len(doc["entries"]))
