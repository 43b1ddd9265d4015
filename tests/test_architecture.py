"""docs/architecture.md states the layers the import-linter contracts in pyproject.toml check,
and names every module: a layer moved in one and not the other, or a module nobody
documented, fails here (the contracts themselves run in the lint step: ``lint-imports``).

The doc's "Layers" tables list a package's layers top to bottom, one row a layer; siblings of
one layer share a row, written ``a`` · ``b`` (independent: neither imports the other). Its
"Rules beyond the layers" table lists each forbidden contract: what may not import what.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
PACKAGES = ("compiler", "reconciler")
NAMES = re.compile(r"`([\w.]+)/?`")


def _contracts() -> dict[str, dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {c["id"]: c for c in config["tool"]["importlinter"]["contracts"]}


def _section(text: str, title: str) -> list[str]:
    """The table rows (``| … |`` lines, header and rule left out) under a heading."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip("#").strip() == title)
    rows: list[str] = []
    for line in lines[start + 1:]:
        if line.startswith("#"):
            break
        if line.startswith("|") and not set(line) <= set("|- "):
            rows.append(line)
    return rows[1:]  # the header


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def _layer_sets(layers: list[str]) -> list[frozenset[str]]:
    return [frozenset(part.strip() for part in layer.split("|")) for layer in layers]


def test_the_doc_states_each_packages_layers_as_the_contracts_do() -> None:
    text = DOC.read_text(encoding="utf-8")
    contracts = _contracts()
    for package in PACKAGES:
        documented = [frozenset(NAMES.findall(_cells(row)[0]))
                      for row in _section(text, f"Layers of `{package}/`")]
        assert documented == _layer_sets(contracts[package]["layers"]), package


def test_every_folder_and_top_module_is_in_a_layer() -> None:
    """A layers contract checks only what it lists: a new folder left out would escape it."""
    contracts = _contracts()
    for package in PACKAGES:
        children = {p.stem for p in (ROOT / package).iterdir()
                    if (p.suffix == ".py" and p.stem != "__init__")
                    or (p.is_dir() and (p / "__init__.py").exists())}
        layered = set().union(*_layer_sets(contracts[package]["layers"]))
        assert children == layered, package


def test_the_doc_states_every_rule_beyond_the_layers() -> None:
    text = DOC.read_text(encoding="utf-8")
    forbidden = {c["id"]: c for c in _contracts().values() if c["type"] == "forbidden"}
    documented = {}
    for row in _section(text, "Rules beyond the layers"):
        ident, sources, targets, _why = _cells(row)
        documented[ident.strip("`")] = (set(NAMES.findall(sources)), set(NAMES.findall(targets)))
    assert documented == {ident: (set(c["source_modules"]), set(c["forbidden_modules"]))
                          for ident, c in forbidden.items()}


def _undocumented(text: str) -> list[str]:
    """Modules the doc names neither by path (``compiler/core/units.py``) nor in the row of
    their folder (``| `compiler/core/` | … `units` … |``)."""
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([\w/]+/)` \|.*$", text, re.M)}
    missing = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            folder, name = rel.rsplit("/", 1)
            if name == "__init__.py" or f"`{rel}`" in text:
                continue
            if f"`{name.removesuffix('.py')}`" not in rows.get(folder + "/", ""):
                missing.append(rel)
    return missing


def test_the_doc_names_every_module() -> None:
    assert _undocumented(DOC.read_text(encoding="utf-8")) == []


def test_a_module_nobody_documented_is_found() -> None:
    """The check can fail: a doc without one folder's row misses that folder's modules."""
    text = DOC.read_text(encoding="utf-8")
    cut = re.sub(r"^\| `reconciler/planner/` \|.*$", "", text, flags=re.M)
    assert "reconciler/planner/make.py" in _undocumented(cut)
