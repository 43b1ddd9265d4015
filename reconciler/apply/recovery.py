"""Finishing what a killed apply left behind.

A runner killed with SIGKILL leaves its run ``running`` and the op it was calling
``running`` in the journal: that op is *in doubt* (the provider may or may not have done
it). Whoever holds the site's lock next marks such runs interrupted and sends each op in
doubt again under its old op_id when the new plan has the same action, so the provider
deduplicates it; an op in doubt that the new plan no longer needs is closed as skipped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from reconciler.apply import codes
from reconciler.plan_model import Action
from reconciler.state import OpStatus, RunStatus, StateStore

RECENT_RUNS = 50  # runs of the site looked at for ones left running (only the last can be)

OpKey = tuple[str, str, str]  # (plan verb, entry id, provider)


def run_prefix(lock: str) -> str:
    """Run ids start with the lock's name, so a shared store can tell sites' runs apart."""
    return f"{lock}@"


def op_key(action: Action) -> OpKey:
    return (action.action, action.entry, action.provider or "")


@dataclass(frozen=True, slots=True)
class Recovery:
    interrupted: tuple[str, ...]  # runs left running by a runner that died
    in_doubt: Mapping[OpKey, str]  # op_id of each op that was running when its runner died

    def close_unneeded(self, store: StateStore, adopted: set[str]) -> int:
        """Close the ops in doubt that no action of the new plan took over; return how many."""
        closed = 0
        for op in self.in_doubt.values():
            if op not in adopted:
                store.journal_finish(op, OpStatus.SKIPPED, error=f"{codes.SKIP_INTERRUPTED}: "
                                     "its run was interrupted and the next plan no longer "
                                     "has this action")
                closed += 1
        return closed


def recover(store: StateStore, lock: str) -> Recovery:
    """Call only while holding ``lock``: then no other run of this site can be alive."""
    prefix = run_prefix(lock)
    in_doubt: dict[OpKey, str] = {}
    for entry in store.in_doubt(prefix):  # oldest run first: a newer run's op wins
        in_doubt[(entry.action, entry.entry_id, entry.provider)] = entry.op_id
    interrupted = tuple(r.run_id for r in store.runs(prefix=prefix, limit=RECENT_RUNS)
                        if r.status is RunStatus.RUNNING)
    for run_id in interrupted:
        store.finish_run(run_id, RunStatus.INTERRUPTED)
    return Recovery(interrupted, in_doubt)
