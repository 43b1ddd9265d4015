"""Per-kind planning facts: management defaults, apply order, and which kinds hold user data.

Kept in one table so the order of the plan, the defaults in docs/plan.md and the rules
agree.
"""

from __future__ import annotations

from collections.abc import Mapping

from reconciler.plan.model import Verb

LEVELS = ("observe", "report", "correct", "correct-destructive")

# Host states in which jobs may still run there, and whose workers report (PR-4).
RUNNING = frozenset({"joining", "available", "draining"})

# Supply that the site-config fully describes may be removed by default; volumes, user
# directories and quotas hold or guard users' data, so removing them is opt-in.
DEFAULT_MANAGEMENT: Mapping[str, str] = {
    "host": "correct-destructive",
    "instance": "correct-destructive",
    "dataset-copy": "correct-destructive",
    "counter": "correct-destructive",
    "license": "correct-destructive",
    "storage-pool": "correct-destructive",
    "host-group": "correct-destructive",
    "dataset": "correct-destructive",
    "volume": "correct",
    "volume-dir": "correct",
    "quota": "correct",
    # A volume's retention evicts job directories past it (with --destroy); jobs are the
    # controller's record, read by that rule and never planned on.
    "job-dir": "correct-destructive",
    "job": "observe",
}
FALLBACK_LEVEL = "correct"

# Deleting these loses users' files: it also needs the destroy permission (``--destroy``).
DATA_KINDS = frozenset({"volume", "volume-dir", "job-dir"})

# Creation order: a parent kind comes before the kinds that depend on it. Removals run in
# the reverse order, so children go before their parents.
KIND_ORDER = (
    "host-group",
    "storage-pool",
    "license",
    "dataset",
    "volume",
    "volume-dir",
    "job-dir",
    "quota",
    "instance",
    "host",
    "counter",
    "dataset-copy",
)
_RANK = {kind: i for i, kind in enumerate(KIND_ORDER)}

PHASE_CONSTRUCT, PHASE_DRAIN, PHASE_DESTROY = 0, 1, 2


def phase_of(verb: Verb) -> int:
    """Hosts drain before anything is destroyed, so their jobs can finish meanwhile."""
    if verb is Verb.DRAIN:
        return PHASE_DRAIN
    if verb.removes:
        return PHASE_DESTROY
    return PHASE_CONSTRUCT


def order_key(verb: Verb, kind: str, entry: str) -> tuple[int, int, str]:
    """Stable apply order: (phase, kind order — reversed for removals, entry id)."""
    phase = phase_of(verb)
    rank = _RANK.get(kind, len(KIND_ORDER))
    if phase == PHASE_DESTROY:
        rank = len(KIND_ORDER) - rank
    return (phase, rank, entry)
