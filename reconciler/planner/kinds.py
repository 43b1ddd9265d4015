"""Per-kind planning facts: apply order, and which kinds hold user data.

Kept in one table so the order of the plan and the rules agree. The kinds themselves are the
contract's (compiler/contract/vocabulary.py), and so are the management defaults
(compiler/contract/settings.py).
"""

from __future__ import annotations

from compiler.contract.vocabulary import EntryKind
from reconciler.plan.model import Verb

# Deleting these loses users' files: it also needs the destroy permission (``--destroy``).
DATA_KINDS = frozenset({EntryKind.VOLUME, EntryKind.VOLUME_DIR, EntryKind.JOB_DIR})

# Creation order: a parent kind comes before the kinds that depend on it. Removals run in
# the reverse order, so children go before their parents.
_K = EntryKind
KIND_ORDER = (_K.HOST_GROUP, _K.STORAGE_POOL, _K.LICENSE, _K.DATASET, _K.VOLUME, _K.VOLUME_DIR,
              _K.JOB_DIR, _K.QUOTA, _K.INSTANCE, _K.HOST, _K.COUNTER, _K.DATASET_COPY)
_RANK: dict[str, int] = {kind: i for i, kind in enumerate(KIND_ORDER)}

PHASE_CONSTRUCT, PHASE_DRAIN, PHASE_DESTROY = 0, 1, 2


def phase_of(verb: Verb) -> int:
    """Hosts drain before anything is destroyed, so their jobs can finish meanwhile."""
    if verb is Verb.DRAIN:
        return PHASE_DRAIN
    if verb.removes:
        return PHASE_DESTROY
    return PHASE_CONSTRUCT


_PHASES = {verb: phase_of(verb) for verb in Verb}  # looked up once per action of a plan


def order_key(verb: Verb, kind: str, entry: str) -> tuple[int, int, str]:
    """Stable apply order: (phase, kind order — reversed for removals, entry id)."""
    phase = _PHASES[verb]
    rank = _RANK.get(kind, len(KIND_ORDER))
    if phase == PHASE_DESTROY:
        rank = len(KIND_ORDER) - rank
    return (phase, rank, entry)
