"""The names of the files ``xce-compile`` writes, defined once: the compiler writes them, the
reconciler reads them, and ``xce-drift --out`` refuses to write over them. Beside them, the
reconciler's work folder by the site and its state store file (the defaults of ``--workdir``
and ``--state``). A module of its own, importing nothing, so a reader pays no import cost for
the writer's dependencies."""

from __future__ import annotations

from pathlib import Path

SUPPLY_MAP = "supply-map.json"
BINDINGS = "bindings.json"
DRIFT = "drift.json"
ALLOWLISTS = "allowlists.json"  # only when the site compiles with policies
MANIFEST = "manifest.json"
# every file xce-compile may write beside its manifest
COMPILED_FILES = (SUPPLY_MAP, BINDINGS, DRIFT, ALLOWLISTS)
BUILD_DIR = Path("build")  # where xce-compile writes unless told --out
WORKDIR = ".xce"  # the reconciler's work folder beside the site (or compiled map)
STATE_FILE = "state.sqlite"  # the embedded state store, inside the workdir
