"""The benchmark generator makes a clean site of the requested size; make_live drifts it."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import orjson

from compiler.cmds.compile import main as compile_main
from compiler.compile import compile_site
from compiler.contract.supply_map import SupplyMap
from compiler.core.problems import Problems

ROOT = Path(__file__).resolve().parents[2]
SHAPE = {"hosts": 2000, "groups": 20, "users": 300, "datasets": 40, "copies": 3}


def _run(script: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def _generate(out: Path, seed: int = 1) -> Path:
    flags = [f"--{k}={v}" for k, v in SHAPE.items()]
    _run("gen_site.py", *flags, f"--seed={seed}", str(out))
    return out


def _files(site: Path) -> dict[str, bytes]:
    return {str(p.relative_to(site)): p.read_bytes() for p in sorted(site.rglob("*.yaml"))}


def test_generated_site_compiles_clean_with_the_requested_counts(tmp_path: Path) -> None:
    site = _generate(tmp_path / "site")
    problems = Problems()
    compiled, _ = compile_site(site, problems)
    assert [p.code for p in problems] == []
    assert compiled is not None
    entries = compiled.supply_map.entries.values()
    kinds = Counter(e.kind for e in entries)
    assert kinds["host"] == SHAPE["hosts"]
    assert kinds["host-group"] == SHAPE["groups"]
    assert kinds["dataset"] == SHAPE["datasets"]
    assert kinds["dataset-copy"] == SHAPE["datasets"] * SHAPE["copies"]
    user_quotas = [
        e
        for e in entries
        if e.kind == "quota"
        and e.spec["scope"] == "user"
        and e.location
        and e.location.startswith("volume/")
    ]
    assert len({e.spec["subject"] for e in user_quotas}) == len(user_quotas) == SHAPE["users"]
    assert kinds["volume-dir"] == SHAPE["users"]
    assert kinds["instance"] > 0  # a provisioned group is among them
    copies_at = Counter(e.location for e in entries if e.kind == "dataset-copy")
    assert len(copies_at) > SHAPE["copies"]  # caches at many locations, not one


def test_generator_is_deterministic(tmp_path: Path) -> None:
    first = _files(_generate(tmp_path / "a"))
    assert first == _files(_generate(tmp_path / "b"))
    assert first != _files(_generate(tmp_path / "c", seed=2))


def test_make_live_drifts_the_requested_fraction(tmp_path: Path) -> None:
    build = tmp_path / "build"
    assert compile_main([str(_generate(tmp_path / "site")), "--out", str(build)]) == 0
    live_path = tmp_path / "live.json"
    _run("make_live.py", str(build / "supply-map.json"), str(live_path), "--drift", "0.03")
    desired = SupplyMap.from_json(orjson.loads((build / "supply-map.json").read_bytes()))
    live = SupplyMap.from_json(orjson.loads(live_path.read_bytes()))
    third = round(len(desired.entries) * 0.03) // 3
    missing = desired.entries.keys() - live.entries.keys()
    extra = live.entries.keys() - desired.entries.keys()
    changed = [
        i
        for i in desired.entries.keys() & live.entries.keys()
        if live.entries[i].amount != desired.entries[i].amount
    ]
    assert len(missing) == len(changed) == third
    assert len(extra) >= third
    assert all(live.entries[i].source == "discovered" for i in extra if i.startswith("host/"))
    assert set(live.generations) == {e.provider for e in live.entries.values()}
    assert all(
        isinstance(live.entries[i].spec.get("since"), int)
        for i in live.entries.keys() & desired.entries.keys()
        if i.startswith("host/")
    )
