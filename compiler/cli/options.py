"""Options several commands share, defined once."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

ENV_WORKDIR = "XCE_WORKDIR"


def add_workdir(p: argparse.ArgumentParser, default: str) -> None:
    """``--workdir``, defaulting to ``$XCE_WORKDIR``: a CI job's checkout is fresh (and
    actions/checkout cleans ignored files), so the embedded providers' memory must live in a
    folder outside it that every job of the site uses. Given this way, it counts as given."""
    env = os.environ.get(ENV_WORKDIR)
    p.add_argument("--workdir", type=Path, default=Path(env) if env else None,
                   help=f"the reconciler's work folder, holding the embedded providers' state "
                   f"(default: ${ENV_WORKDIR}, else {default})")
