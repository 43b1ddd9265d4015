"""Job directories (N14): evict what is past its volume's retention, report the orphans.

A job directory (``job-dir/<volume>/<user>/<job>``) is live-only supply: the directory
provider reports it, with the newest write anywhere in its tree. Whether it may go rests on
its volume's retention (the desired ``volume/<v>`` entry's spec, ``compiler.model.retention``)
and on its job as the controller map reports it (``job/<id>``, read once per directory, and
only for a directory idle for the whole retention). What is kept in the normal course —
written within the retention, a job running or pending, outputs not yet fetched — is not
listed: a volume holds millions of job directories, and the plan lists only evictions,
orphans, trees that could not be checked and anomalies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from compiler.contract.supply_map import Entry
from compiler.contract.vocabulary import EntryKind
from compiler.core.units import duration_text
from reconciler.plan.model import Verb
from reconciler.planner.builder import Builder

OUTPUT_FETCH, REMOVE = "output-fetch", "remove"  # the spec values of compiler.model.retention


@dataclass(frozen=True, slots=True)
class Retention:
    """A volume's retention as its entry's spec carries it (seconds)."""

    keep: int
    from_fetch: bool  # the TTL counts from the fetch of the outputs, not the job's end
    unfetched: int | None  # with from_fetch: at most this long after the end when never fetched
    remove_orphans: bool


def _seconds(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def retention_of(spec: Mapping[str, Any], keep: int) -> Retention:
    """The retention of a volume whose spec keeps job directories ``keep`` seconds."""
    return Retention(keep, spec.get("retention_from") == OUTPUT_FETCH,
                     _seconds(spec.get("retention_unfetched")), spec.get("orphans") == REMOVE)


def _ago(b: Builder, at: float) -> str:
    return f"{duration_text(b.now - at, 'words')} ago"


def _expiry(policy: Retention, job: Mapping[str, Any]) -> tuple[int, int, str, str] | str | None:
    """When a finished job's directory expires: (its clock's start, the TTL, what started
    the clock, what the TTL is), None while it waits for its outputs to be fetched, or what
    is wrong with the job."""
    ended, fetched = _seconds(job.get("ended")), _seconds(job.get("fetched"))
    if ended is None:
        return "its job is finished but the controller map has no end time for it"
    keep = f"retention {duration_text(policy.keep, 'words')}"
    if policy.from_fetch and fetched is not None:
        return fetched, policy.keep, "outputs fetched", keep
    if not policy.from_fetch:
        return ended, policy.keep, "finished", keep
    if policy.unfetched is None:
        return None  # kept until its outputs are fetched
    return (ended, policy.unfetched, "finished",
            f"outputs never fetched, kept at most {duration_text(policy.unfetched, 'words')} "
            "unfetched")


def _orphan(b: Builder, live: Entry, name: str, policy: Retention, last_write: int) -> None:
    """A directory idle for the retention whose job the controller map does not know."""
    what = (f"job dir {name}: job {live.spec.get('job')} is unknown to the controller map; "
            f"last written {_ago(b, last_write)}")
    if not policy.remove_orphans:
        b.note("orphans", live, f"{what}; reported (retention orphans: report)")
    elif not b.kind_holders(EntryKind.JOB):
        b.note("orphans", live, f"{what}; not removed: the controller map reports no job at "
               "all, so it may not report jobs (they are recorded with xce-map job)")
    else:
        b.act(Verb.EVICT, live,
              f"evict orphan {what}, retention {duration_text(policy.keep, 'words')}",
              before=live, after=None, unacted="orphans", claim=True, orphan=True)


def plan_job_dir(b: Builder, desired: Entry | None, live: Entry | None) -> None:
    """The rule of a ``job-dir`` entry; the cheap tests first, the job read last."""
    if desired is not None:
        b.note("drift_reported", desired, "a job directory is made by its job, never by "
               "config; nothing planned")
        return
    assert live is not None
    volume = b.desired.get(live.location or "")
    # Without a retention (or one that is not seconds, in a map written by hand) every job
    # directory on the volume is kept.
    keep = None if volume is None else _seconds(volume.spec.get("retention"))
    if volume is None or keep is None:
        return
    spec = live.spec
    name = f"{spec.get('user')}/{spec.get('job')}"
    last_write = _seconds(spec.get("last_write"))
    if spec.get("unchecked"):
        b.note("drift_reported", live, f"job dir {name} could not be checked fully: "
               f"{spec['unchecked']}; kept")
        return
    if last_write is None:
        b.note("drift_reported", live, f"job dir {name}: its provider reports no last write; "
               "kept")
        return
    if b.now - last_write < keep:
        return  # written within the retention: kept, whatever its job
    policy = retention_of(volume.spec, keep)
    job = b.read(f"job/{spec.get('job')}")
    if job is None:
        _orphan(b, live, name, policy, last_write)
    elif job.state == "finished":
        _finished(b, live, name, policy, job)
    # otherwise running, or pending again after a requeue: kept


def _finished(b: Builder, live: Entry, name: str, policy: Retention, job: Entry) -> None:
    """A finished job's idle directory: evicted once its clock is past the TTL. A job of
    another user is not this directory's (a user may name a folder of their own 1234)."""
    user = job.spec.get("user")
    if user is not None and user != live.spec.get("user"):
        b.note("drift_reported", live, f"job dir {name}: job {live.spec.get('job')} is "
               f"{user}'s, not {live.spec.get('user')}'s; kept")
        return
    expiry = _expiry(policy, job.spec)
    if isinstance(expiry, str):
        b.note("drift_reported", live, f"job dir {name}: {expiry}; kept")
    elif expiry is not None:
        since, ttl, clock, tail = expiry
        if b.now - since >= ttl:
            b.act(Verb.EVICT, live, f"evict job dir {name}: {clock} {_ago(b, since)}, {tail}",
                  before=live, after=None, claim=True)
