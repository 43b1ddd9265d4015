"""The live supply map: gathered from every bound provider (``gather``), checked against
what the state store remembers of earlier reads (``trust``), or read from a snapshot file
that proxies exported (``snapshot``). The problem codes are in ``codes``."""

from __future__ import annotations

from compiler.contract.entry import MAX_ID_BYTES, entry_errors, too_long, topology_error
from reconciler.live.codes import (
    BAD_BINDING,
    BAD_BINDINGS,
    CANNOT_ACCEPT,
    CANNOT_ACCEPT_SHRINK,
    DUPLICATE,
    GARBAGE,
    HINTS,
    NOT_BOUND,
    PARTIAL,
    REFUSED,
    ROLLED_BACK,
    SHRANK,
    SNAPSHOT_NEWER,
    SNAPSHOT_NOT_JSON,
    SNAPSHOT_SHAPE,
    SNAPSHOT_UNREADABLE,
    SNAPSHOT_UNREPORTED,
    TIMED_OUT,
    UNAVAILABLE,
)
from reconciler.live.gather import LiveResult, gather_live, parse_inventory
from reconciler.live.snapshot import (
    MAX_SNAPSHOT_PROBLEMS,
    _snapshot_problems,
    load_live_snapshot,
    other_site_problem,
)
from reconciler.live.trust import (
    UNCOUNTED_KINDS,
    LossLimit,
    distrust_rollbacks,
    distrust_shrinks,
    kind_counts,
    trust_generations,
)

__all__ = [
    "BAD_BINDING", "BAD_BINDINGS", "CANNOT_ACCEPT", "CANNOT_ACCEPT_SHRINK", "DUPLICATE",
    "GARBAGE", "HINTS", "MAX_ID_BYTES", "MAX_SNAPSHOT_PROBLEMS", "NOT_BOUND",
    "PARTIAL", "REFUSED", "ROLLED_BACK", "SHRANK", "SNAPSHOT_NEWER", "SNAPSHOT_NOT_JSON",
    "SNAPSHOT_SHAPE", "SNAPSHOT_UNREADABLE", "SNAPSHOT_UNREPORTED",
    "TIMED_OUT", "UNAVAILABLE", "UNCOUNTED_KINDS", "LiveResult", "LossLimit",
    "_snapshot_problems", "distrust_rollbacks", "distrust_shrinks",
    "entry_errors", "gather_live", "kind_counts", "load_live_snapshot", "other_site_problem",
    "parse_inventory",
    "too_long", "topology_error", "trust_generations",
]
