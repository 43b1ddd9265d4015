"""Provisioning backoff (P6): an instance whose host never joined is not provisioned again at
once, plan after plan, so a broken image costs a few instances, not one per join deadline.

The state store keeps, per instance entry, the provisioning attempts in a row whose host
never joined (``ProvisionAttempts``, handed to ``make_plan`` as ``attempts``). The release
of such an instance carries the attempt it ends (``Action.failed_attempt``), which the apply
records as it starts the release; a record whose host joined since, whose entry config
dropped or whose template changed is listed in ``Plan.attempts_reset``, which the apply
forgets. A re-provision (``create``) waits ``backoff × 2^(n-1)`` after the n-th failure
(``pending``) and, after ``attempts`` failures, is not planned (``drift_reported``).

What a plan's staleness check covers: the apply records a failure before it asks the
provider to release the instance, so a plan that saw the instance gone saw the failure too;
a failure recorded after a plan was made comes with the release of an instance that plan
saw live, whose fingerprint then differs, so the plan is refused as stale.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from compiler.contract.settings import ProvisioningPolicy
from compiler.contract.supply_map import Entry
from compiler.contract.vocabulary import HostState
from compiler.core.times import format_utc
from compiler.core.units import duration_text
from reconciler.plan.attempts import ProvisionAttempts
from reconciler.plan.file import fingerprint
from reconciler.plan.model import FailedAttempt
from reconciler.planner.builder import Builder

# the host is or was in service: the attempt that made its instance succeeded
JOINED = frozenset({HostState.AVAILABLE, HostState.DRAINING, HostState.DRAINED})
GIVE_UP_FIX = ("fix the template (an image that never joins), then change `template` or "
               "raise site.provisioning.attempts")


def _failures(n: int) -> str:
    return f"{n} failure" + ("s" if n != 1 else "")


def _host_of(instance_id: str) -> str:
    return f"host/{instance_id.partition('/')[2]}"


def instance_identity(instance: Entry) -> str:
    """Which instance a release ends: when it was made (``spec.since``), else the digest of
    its entry, so the same release recorded twice is one failure."""
    since = instance.spec.get("since")
    if isinstance(since, int | float) and not isinstance(since, bool):
        return str(since)
    return fingerprint(instance)


def _desired_template(b: Builder, entry_id: str) -> object:
    """For a provider that does not report the template an instance was made from."""
    desired = b.desired.get(entry_id)
    return "" if desired is None else desired.spec.get("template", "")


def failed_attempt(b: Builder, instance: Entry) -> FailedAttempt:
    """The provisioning attempt that releasing ``instance`` (its host never joined) ends."""
    template = str(instance.spec.get("template") or _desired_template(b, instance.id))
    identity = instance_identity(instance)
    record = b.attempts.get(instance.id)
    if record is None or record.template != template:
        return FailedAttempt(1, template, identity)
    if record.instance == identity:  # its release was recorded already (and is retried)
        return FailedAttempt(record.failures, template, identity)
    return FailedAttempt(record.failures + 1, template, identity)


def _next(attempt: int, policy: ProvisioningPolicy) -> str:
    done = f"provisioning attempt {attempt} of {policy.attempts} failed"
    if attempt >= policy.attempts:
        return f"{done}: no further attempt (site.provisioning.attempts)"
    return f"{done}: the next waits {duration_text(policy.wait(attempt), 'words')}"


def count_release(b: Builder, instance: Entry) -> None:
    """Mark the release of ``instance`` that ``Builder.act`` has just planned as a failed
    provisioning attempt, for the apply to record, and say which in its reason."""
    action = b.actions[-1]
    assert action.entry == instance.id, action.id
    failed = failed_attempt(b, instance)
    b.actions[-1] = replace(action, failed_attempt=failed, reason=f"{action.reason}; "
                            f"{_next(failed.attempt, b.settings.provisioning)}")


def create_reason(b: Builder, desired: Entry, why: str) -> str | None:
    """The reason for creating instance ``desired``, naming the attempt when earlier ones
    failed; None when the backoff or the attempt limit holds it back (noted instead)."""
    record = b.attempts.get(desired.id)
    if record is None:
        return why
    host = b.read(_host_of(desired.id))  # only now: it gates and fingerprints the decision
    if host is not None and host.state in JOINED:
        return why  # joined since: the record no longer counts (attempts_reset)
    if record.template != desired.spec.get("template"):
        return (f"{why}; the {_failures(record.failures)} whose host never joined were "
                f"of template {record.template}, not this one: not counted")
    policy, n = b.settings.provisioning, record.failures
    last = record.failed_at.timestamp()
    if n >= policy.attempts:
        b.note("drift_reported", desired, f"gave up after {n} attempts whose host never "
               f"joined (last at {format_utc(last)}); {GIVE_UP_FIX}")
        return None
    wait = policy.wait(n)
    attempt = f"attempt {n + 1} of {policy.attempts}"
    backoff = f"backoff {duration_text(wait, 'words')} after {_failures(n)}"
    if b.now < last + wait:
        b.note("pending", desired, f"next attempt after {format_utc(last + wait)}: {attempt} "
               f"({backoff})")
        return None
    return f"{why}: {attempt} ({backoff} whose host never joined)"


def attempts_reset(attempts: Mapping[str, ProvisionAttempts], desired: Mapping[str, Entry],
                   live: Mapping[str, Entry]) -> dict[str, str]:
    """Records that no longer count — the host joined, config dropped the entry or changed
    its template — each with the ``instance`` it names, for the apply to forget."""
    reset: dict[str, str] = {}
    for entry_id, record in sorted(attempts.items()):
        wanted = desired.get(entry_id)
        host = live.get(_host_of(entry_id))
        if (wanted is None or wanted.spec.get("template") != record.template
                or (host is not None and host.state in JOINED)):
            reset[entry_id] = record.instance
    return reset
