"""Pausing Python's cyclic garbage collector while big acyclic data is built.

A compile or a plan builds millions of long-lived objects (entries and their dicts) and
hardly any cycles; the collector would rescan them over and over — a quarter to a third
of the run time on a 100,000-host site. The previous state is restored afterwards, so
in-process callers (tests, other tools) are unaffected.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside the block; restores the previous state."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
