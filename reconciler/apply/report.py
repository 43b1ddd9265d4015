"""What an apply did, as plain data: one outcome per action plus why it stopped, if it did.

Renderers (text, json) and the exit code read this; nothing here prints. ``stale`` is set
when the plan was refused before anything ran because the world moved on since planning;
``unknown`` lists the entries the plan could not decide about (a provider did not report),
so an apply that did all it planned is still not a full success (exit 1).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from compiler.cli.runner import EXIT_ERROR, EXIT_OK, EXIT_STALE
from compiler.core.hostlist import fold_subjects
from compiler.core.problems import Problem
from reconciler.plan.model import Action, Note


class Status(StrEnum):
    DONE = "done"
    ALREADY_DONE = "already-done"  # by an earlier run of the same plan (journal)
    FAILED = "failed"
    SKIPPED = "skipped"


SUCCEEDED = frozenset({Status.DONE, Status.ALREADY_DONE})


@dataclass(frozen=True, slots=True)
class Outcome:
    """One action's result. ``code`` (XCE8xx) says why it failed or was skipped."""

    action: Action
    op_id: str
    status: Status
    attempts: int = 0
    code: str | None = None
    message: str = ""
    hint: str = ""
    error: str | None = None  # the provider's error code (UNAVAILABLE, …) when it failed
    seconds: float = 0.0
    stop: Problem | None = None  # set when this outcome must stop the whole apply
    warnings: tuple[str, ...] = ()  # what a provider did differently (e.g. owner not applied)
    cause: str | None = None  # skipped: the action (id) whose failure or skip kept it waiting

    @property
    def ok(self) -> bool:
        return self.status in SUCCEEDED


@dataclass(frozen=True, slots=True)
class FollowOn:
    """The actions that did not run because ``cause`` failed or was skipped: what waited on
    one failure is said once, with it, not once per waiting action."""

    cause: Outcome
    waited: tuple[Outcome, ...]


@dataclass(frozen=True, slots=True)
class ApplyReport:
    plan_digest: str
    desired_digest: str
    revision: str | None
    run_id: str | None
    epoch: int | None
    outcomes: tuple[Outcome, ...] = ()
    notices: tuple[Problem, ...] = ()
    stopped: Problem | None = None
    stale: tuple[Problem, ...] = ()
    seconds: float = 0.0
    unknown: tuple[Note, ...] = ()  # nothing was planned for these: their provider was silent

    def follow_ons(self) -> tuple[FollowOn, ...]:
        """The skipped actions that waited on another, per cause (in plan order of the
        cause); a skip whose cause is not in the report stands alone, as its own cause."""
        by_id = {o.action.id: o for o in self.outcomes}
        waited: dict[str, list[Outcome]] = {}
        for o in self.outcomes:
            if o.cause is not None and o.cause in by_id:
                waited.setdefault(o.cause, []).append(o)
        order = {action_id: i for i, action_id in enumerate(by_id)}
        causes = sorted(waited, key=order.__getitem__)
        return tuple(FollowOn(by_id[c], tuple(waited[c])) for c in causes)

    def counts(self) -> dict[str, int]:
        counted = Counter(o.status for o in self.outcomes)
        return {s.value: counted.get(s, 0) for s in Status}

    @property
    def result(self) -> str:
        """``stale``, ``failed``, ``incomplete`` (all that was planned is done, but some
        entries could not be planned) or ``applied``: the one word a CI job keys on."""
        if self.stale:
            return "stale"
        if self.stopped is not None or any(o.status is Status.FAILED for o in self.outcomes):
            return "failed"
        return "incomplete" if self.unknown else "applied"

    @property
    def exit_code(self) -> int:
        return {"stale": EXIT_STALE, "failed": EXIT_ERROR,
                "incomplete": EXIT_ERROR}.get(self.result, EXIT_OK)


def waiting_text(outcomes: Sequence[Outcome]) -> str:
    """``create host/gn[001-064], counter/gpu@host/gn[001-064]; update host-group/gpu``:
    the entries per verb, folded as hostlists are."""
    by_verb: dict[str, list[str]] = {}
    for o in outcomes:
        by_verb.setdefault(o.action.verb.value, []).append(o.action.entry)
    return "; ".join(f"{verb} {fold_subjects(ids)}" for verb, ids in by_verb.items())
