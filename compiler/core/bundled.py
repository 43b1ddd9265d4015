"""The product's data shipped inside the package: the one place that locates it.

The policies (catalog, roles, guardrails), the example site and the site-config JSON Schema
live at this repository's top (``policies/``, ``site-config/``, ``docs/``); ``compiler/_data/``
holds symbolic links to them, which the wheel build copies as package data (pyproject.toml,
docs/decisions.md). So the same lookup works in an installed wheel and in the editable checkout.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

DATA = "_data"  # the folder of package data inside the ``compiler`` package


def _shipped(name: str) -> Path:
    """A file or folder of the package data, as a real path (the package is never zipped)."""
    found = resources.files("compiler").joinpath(DATA, name)
    if not isinstance(found, Path):  # pragma: no cover - only a zip import would do this
        raise RuntimeError(f"xce-gitops must be installed as files, not zipped: {found}")
    return found


def policies_dir() -> Path:
    """The policies the product ships: opcodes.yaml, roles.yaml, guardrails.yaml."""
    return _shipped("policies")


def example_site_dir() -> Path:
    """The full example site (this repository's ``site-config/``). In an editable checkout it
    is the working folder itself, so it may hold a ``.xce`` workdir: copy only what a site
    would commit."""
    return _shipped("site-config")


def schema_file() -> Path:
    """The JSON Schema of one site-config file, as ``xce-compile --schema`` prints it."""
    return _shipped("site-config.schema.json")
