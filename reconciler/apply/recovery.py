"""Finishing what a killed apply left behind.

A runner killed with SIGKILL leaves its run ``running`` and the ops it was calling
``running`` in the journal: those ops are *in doubt* (the provider may or may not have done
them), and so is an op whose call ran out of time. They stay in doubt, whatever runs come
and go, until a call of the same op gets an answer. Whoever holds the site's lock next marks
dead runs interrupted and sends each op in doubt again under its old op_id when the new plan
has the same action, so the provider deduplicates it; an op in doubt that a complete new
plan no longer needs is closed as skipped.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from reconciler.apply import codes
from reconciler.plan.model import Action
from reconciler.state import JournalEntry, RunStatus, StateStore
from reconciler.state.runs import run_prefix

RECENT_RUNS = 50  # runs of the site looked at for ones left running (only the last can be)

OpKey = tuple[str, str, str]  # (plan verb, entry id, provider)


def op_key(action: Action) -> OpKey:
    return (action.verb.value, action.entry, action.provider or "")


@dataclass(frozen=True, slots=True)
class Recovery:
    interrupted: tuple[str, ...]  # runs left running by a runner that died
    in_doubt: Mapping[OpKey, str]  # op_id in doubt for each action (the newest run's)
    doubtful: tuple[JournalEntry, ...] = ()  # every op in doubt, each with its run

    def close_unneeded(self, store: StateStore, adopted: Collection[str]) -> int:
        """Close the ops in doubt that no action of the new plan took over; return how many.

        Call only with a complete plan: one made for some targets says nothing of the rest.
        """
        why = (f"{codes.SKIP_INTERRUPTED}: its call got no answer and the next plan no "
               "longer has this action")
        return sum(store.journal_abandon(e.run_id, e.op_id, why)
                   for e in self.doubtful if e.op_id not in adopted)


def recover(store: StateStore, lock: str) -> Recovery:
    """Call only while holding ``lock``: then no other run of this site can be alive."""
    prefix = run_prefix(lock)
    doubtful = tuple(store.in_doubt(prefix))  # oldest run first: a newer run's op wins
    in_doubt = {(e.action, e.entry_id, e.provider): e.op_id for e in doubtful}
    interrupted = tuple(r.run_id for r in store.runs(prefix=prefix, limit=RECENT_RUNS)
                        if r.status is RunStatus.RUNNING)
    for run_id in interrupted:  # drops the ops it never sent
        store.finish_run(run_id, RunStatus.INTERRUPTED)
    return Recovery(interrupted, in_doubt, doubtful)
