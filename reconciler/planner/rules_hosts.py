"""Hosts (PR-4) and the instances behind provisioned hosts: lifecycle, orphans, discovery.

A host leaves in two plans: ``drain`` now, ``release`` once the live map says ``drained``,
so running jobs are never cut. An instance is released only after its host is drained.
"""

from __future__ import annotations

from compiler.contract.supply_map import Entry
from compiler.contract.vocabulary import RUNNING, HostState
from compiler.core.units import duration_text
from reconciler.plan.model import FieldChange, Verb
from reconciler.planner.backoff import count_release, create_reason
from reconciler.planner.builder import Builder, with_state
from reconciler.planner.compare import field_changes
from reconciler.planner.rules_discovery import plan_discovered
from reconciler.planner.rules_generic import plan_update

SATISFYING = frozenset({HostState.EXPECTED, HostState.JOINING, HostState.AVAILABLE})
NOT_JOINED = frozenset({HostState.EXPECTED, HostState.JOINING})


def name_of(entry_id: str) -> str:
    return entry_id.partition("/")[2]


def _deadline(b: Builder, *entries: Entry | None) -> int:
    for e in entries:
        if e is not None and isinstance(e.spec.get("join_deadline"), int | float):
            return int(e.spec["join_deadline"])
    return b.settings.join_deadline


def overdue(b: Builder, host: Entry, *desired: Entry | None) -> str | None:
    """Why a host that never joined is an orphan (P6), or None while it may still join.

    A provisioned host's clock starts again with a newer instance (``since`` of the live
    ``instance/<h>``): after an orphan's instance was released and provisioned anew, the
    new one gets its own deadline instead of being released at once, plan after plan.
    """
    since = host.spec.get("since")
    if host.state not in NOT_JOINED or not isinstance(since, int | float):
        return None
    instance = b.read(f"instance/{name_of(host.id)}")
    started = instance.spec.get("since") if instance is not None else None
    if isinstance(started, int | float) and started > since:
        since = started
    deadline = _deadline(b, *desired)
    age = b.now - since
    if age <= deadline:
        return None
    return (f"{duration_text(age - deadline)} past its join deadline of "
            f"{duration_text(deadline)}; {host.state} for {duration_text(age)}")


def _discovered(b: Builder, live: Entry) -> None:
    """Joined but unknown: the site's discovery policy decides (rules_discovery.py)."""
    plan_discovered(b, live)


def _removed_host(b: Builder, live: Entry) -> None:
    state = live.state
    if live.source == "discovered":
        _discovered(b, live)
    elif state in (HostState.AVAILABLE, HostState.JOINING):
        b.act(Verb.DRAIN, live, "not in config: drain, then release once drained", before=live,
              after=with_state(live, HostState.DRAINING.value), unacted="orphans")
    elif state == HostState.DRAINING:
        b.note("pending", live, "not in config: draining, released once drained")
    elif state in (HostState.DRAINED, HostState.EXPECTED, HostState.LOST):
        b.act(Verb.RELEASE, live, f"not in config ({state})", before=live, after=None,
              unacted="orphans")


def _orphan(b: Builder, desired: Entry, why: str) -> None:
    """Never joined (P6): report a static host; release a provisioned host's instance."""
    instance_id = f"instance/{name_of(desired.id)}"
    instance = b.read(instance_id)
    if instance_id not in b.desired and desired.source != "provisioned":
        b.note("orphans", desired, f"never joined ({why}); a static host is only reported")
    elif not b.settings.release_orphans:
        b.note("orphans", desired, f"never joined ({why}); release_orphans is off")
    elif instance is None:
        b.note("orphans", desired, f"never joined ({why}); no live {instance_id} to release")
    elif b.act(Verb.RELEASE, instance, f"{desired.id} never joined ({why}); release_orphans",
               before=instance, after=None, unacted="orphans", observed=(desired.id,),
               orphan=True):
        count_release(b, instance)
        b.note("orphans", desired, f"never joined ({why}); its instance is released")
    else:
        b.note("orphans", desired, f"never joined ({why}); its instance is not released "
               f"(see {instance_id})")


def plan_host(b: Builder, desired: Entry | None, live: Entry | None) -> None:
    if desired is None:
        assert live is not None
        _removed_host(b, live)
        return
    if live is None:
        b.act(Verb.CREATE, desired, "not in the live map", before=None,
              after=with_state(desired, HostState.EXPECTED.value))
        return
    state = live.state
    if live.source == "discovered" and live.owner is None:
        # Joined before its entry was created: config wants it, whatever the discovery
        # policy says about hosts config does not name. Claim it with config's fields.
        b.act(Verb.ADMIT, desired, "in config, but joined before its entry was created: claim it",
              before=live, claim=True, after=with_state(desired, live.state),
              changes=field_changes(desired, live, state=False))
        return
    why = overdue(b, live, desired)
    if why is not None:
        _orphan(b, desired, why)
    elif state in (HostState.DRAINING, HostState.DRAINED):
        b.note("drift_reported", desired, f"{state} although in config (drained by an admin?); "
               "undrain it by hand or remove it from config")
    elif state == HostState.LOST:
        b.note("drift_reported", desired, "lost: in config but the controller lost contact")
    elif state == HostState.RELEASED:
        changes = (FieldChange("state", state, HostState.EXPECTED.value),
                   *field_changes(desired, live, state=False))
        b.act(Verb.UPDATE, desired, "released although in config: expect it again", before=live,
              after=with_state(desired, HostState.EXPECTED.value), changes=changes)
    elif state in SATISFYING:
        plan_update(b, desired, live, state=False)
    else:
        b.note("drift_reported", desired, f"unexpected live state {state!r}")


def plan_instance(b: Builder, desired: Entry | None, live: Entry | None) -> None:
    either = desired if desired is not None else live
    assert either is not None
    host_id = f"host/{name_of(either.id)}"
    if desired is None:
        assert live is not None
        host = b.read(host_id)
        if host is not None and host.state in RUNNING:
            b.note("pending", live, f"not in config: released once {host_id} is drained "
                   f"(it is {host.state})")
        elif live.provider in b.settings.shared_accounts:
            b.note("orphans", live, "carries our owner tag but no entry claims it, in a shared "
                   "cloud account: reported only (P5)")
        else:
            b.act(Verb.RELEASE, live, "not in config: no entry claims this instance", before=live,
                  after=None, unacted="orphans", observed=(host_id,), orphan=True)
        return
    if live is None or live.state == HostState.RELEASED:
        reason = create_reason(b, desired, "not in the live map" if live is None
                               else "released: provision again")  # None: backoff (P6)
        if reason is not None:
            b.act(Verb.CREATE, desired, reason, before=live, after=desired.to_json())
        return
    host = b.read(host_id)
    if host is not None and overdue(b, host, b.desired.get(host_id), desired) is not None:
        return  # the host's rule reports the orphan and releases this instance
    if live.state == HostState.LOST:
        b.note("drift_reported", desired, "lost: the provider no longer has this instance")
    else:
        plan_update(b, desired, live, state=False)
