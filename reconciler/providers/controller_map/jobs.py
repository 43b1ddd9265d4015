"""Job states in the controller map: what job-directory retention reads (N11, N13, N14).

The scheduler (or ``xce-map job …`` standing in for it) reports when a job starts, is
requeued, ends and has its outputs fetched; the planner reads ``job/<id>`` to know
whether a job directory may be evicted. A plan never writes a job: the provider refuses
a create, update or delete of one. Events repeat safely (a reporter retries): a start of
a running job, an end of a finished one, a fetch of a fetched one change nothing, and
the first time recorded stays.

``pending → running → finished``; a requeue (of a running or a finished job) makes it
pending again with the next attempt and clears ``ended`` and ``fetched``, so a requeued
job's directory is never evicted on the previous attempt's clock.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from enum import StrEnum
from typing import Any

from compiler.contract.supply_map import Entry
from compiler.contract.vocabulary import EntryKind, JobState
from reconciler.providers.controller_map.entries import invalid
from reconciler.providers.controller_map.reporter import (
    Cause,
    Declined,
    Report,
    Step,
    record_batch,
)
from reconciler.providers.controller_map.store import MapStore

JOB_KIND = EntryKind.JOB.value
JOB_ID = re.compile(r"[0-9]{1,20}")  # the scheduler's job number; an array is one job
NOT_PLANNED = "jobs are recorded by reporters (xce-map job …), not planned"


class JobEvent(StrEnum):
    START = "start"
    REQUEUE = "requeue"
    END = "end"
    FETCH = "fetch"


def is_job_id(text: str) -> bool:
    return JOB_ID.fullmatch(text) is not None


def refuse_planned(params: Mapping[str, Any]) -> None:
    """Refuse a plan's change of a ``job/…`` entry (INVALID_ARGUMENT): reporters own jobs."""
    doc = params.get("entry")
    for entry_id in (params.get("id"), doc.get("id") if isinstance(doc, Mapping) else None):
        if isinstance(entry_id, str) and entry_id.startswith(JOB_KIND + "/"):
            raise invalid(f"{entry_id}: {NOT_PLANNED}")


def _started(job_id: str, user: str | None, at: int, provider: str) -> Entry:
    if user is None:
        number = job_id.removeprefix("job/")
        reason = (f"{job_id} is new to the controller map: its start needs the job's user "
                  f"(xce-map job start {number} --user USER)")
        raise Declined(job_id, Cause.USER, reason)
    spec = {"user": user, "attempt": 1, "started": at}
    return Entry(job_id, JOB_KIND, JobState.RUNNING.value, "reporter", provider, spec=spec)


def _cleared(spec: Mapping[str, Any], **changes: Any) -> dict[str, Any]:
    kept = {k: v for k, v in spec.items() if k not in ("ended", "fetched")}
    return {**kept, **changes}


def _unknown(job_id: str, event: JobEvent) -> Declined:
    number = job_id.removeprefix("job/")
    reason = (f"{job_id} is not in the controller map, so it cannot {event.value}; "
              f"report its start first (xce-map job start {number} --user USER)")
    return Declined(job_id, Cause.UNKNOWN, reason)


def _move(job: Entry, event: JobEvent, at: int) -> tuple[Entry, bool]:
    """The job after ``event``; (job, False) when it is already done; Declined if refused."""
    state, spec = JobState(job.state), job.spec
    number = job.id.removeprefix("job/")
    if event is JobEvent.START:
        if state is JobState.FINISHED:
            raise Declined(job.id, Cause.STATE, (
                f"{job.id} has finished, so it cannot start again; a job that runs again "
                f"is requeued first (xce-map job requeue {number})"))
        if state is JobState.RUNNING:
            return job, False
        return replace(job, state=JobState.RUNNING.value,
                       spec=_cleared(spec, started=at)), True
    if event is JobEvent.REQUEUE:
        if state is JobState.PENDING:
            return job, False
        attempt = int(spec.get("attempt", 1)) + 1
        return replace(job, state=JobState.PENDING.value,
                       spec=_cleared(spec, attempt=attempt)), True
    if event is JobEvent.END:
        if state is JobState.FINISHED:
            return job, False
        return replace(job, state=JobState.FINISHED.value, spec={**spec, "ended": at}), True
    if state is not JobState.FINISHED:
        raise Declined(job.id, Cause.STATE, (
            f"{job.id} is {state.value}: its outputs are fetched once it has finished; "
            f"report its end first (xce-map job end {number})"))
    if "fetched" in spec and int(spec["fetched"]) <= at:
        return job, False  # the first fetch starts the retention clock; later ones are no news
    return replace(job, spec={**spec, "fetched": at}), True


def _job_step(event: JobEvent, at: float, user: str | None, provider: str) -> Step:
    second = int(at)

    def step(job_id: str, job: Entry | None) -> tuple[Entry, bool]:
        if job is None:
            if event is JobEvent.START:
                return _started(job_id, user, second, provider), True
            raise _unknown(job_id, event)
        owner = job.spec.get("user")
        if user is not None and user != owner:
            raise Declined(job_id, Cause.USER, (
                f"{job_id} is {owner}'s job, not {user}'s; name its user or leave --user out"))
        return _move(job, event, second)

    return step


def record_jobs(
    store: MapStore, event: JobEvent, jobs: Sequence[str], at: float, provider: str,
    *, user: str | None = None,
) -> Report:
    """Apply ``event`` to every job (decimal ids) in one transaction: all or nothing."""
    for job in jobs:
        if not is_job_id(job):
            raise invalid(f"{job!r} is not a job id (decimal digits, like 1234)")
    ids = [f"{JOB_KIND}/{j}" for j in jobs]
    return record_batch(store, event.value, ids, _job_step(event, at, user, provider))
