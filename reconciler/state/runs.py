"""How a site's applies are named in the state store, once: one lock (and one epoch counter)
per site, and run ids that begin with that lock's name, so a shared store tells sites' runs
apart. The apply takes the lock and names its runs by these; the live map's shrink guard reads
the site's runs back by the same prefix."""

from __future__ import annotations


def lock_name(site: str) -> str:
    """One lock (and one epoch counter) per site: two sites never wait on each other."""
    return f"apply/{site}"


def run_prefix(lock: str) -> str:
    """Run ids start with the lock's name, so a shared store can tell sites' runs apart."""
    return f"{lock}@"


def site_runs(site: str) -> str:
    """How the ids of ``site``'s apply runs begin."""
    return run_prefix(lock_name(site))
