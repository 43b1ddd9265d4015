"""A site's status read from the state store alone, as plain frozen data: nothing is compiled
and no provider is started, so it answers on any host that reaches the store, even while the
site's proxies or providers are down. Every age is measured on the store's clock (or the
``--as-of`` instant), the clock every writer stamped its rows with."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from compiler.contract.bindings import BindingError, Bindings, ProxySettings
from reconciler.state import StateStore
from reconciler.state.proxy_records import ProviderLease, PublishedHeader
from reconciler.state.runs import site_runs
from reconciler.state.store import DriftEntry
from reconciler.status import codes


@dataclass(frozen=True, slots=True)
class ProxySeen:
    """One proxy instance as its last heartbeat told."""

    proxy: str
    instance: str
    host: str
    pid: int
    state: str
    started: float
    seen: float


@dataclass(frozen=True, slots=True)
class LeaseState:
    """A provider lease: ``held`` since it was taken, ``lapsed`` since it ran out unrenewed,
    or ``released`` (its holder let it go; ``since`` None)."""

    provider: str
    holder: str
    instance: str
    epoch: int
    state: str
    since: float | None


@dataclass(frozen=True, slots=True)
class ConfigState:
    """The configuration the site's proxies follow."""

    seq: int
    digest: str
    applied: float
    applied_by: str


@dataclass(frozen=True, slots=True)
class LastApply:
    """What was last applied, and the site's most recent apply run (None: none recorded)."""

    digest: str | None
    revision: str | None
    applied: float | None
    run_id: str | None
    run_status: str | None
    run_started: float | None
    run_finished: float | None


@dataclass(frozen=True, slots=True)
class WaitingPlan:
    """A plan recorded for review and not applied yet."""

    desired_digest: str
    commit: str
    branch: str
    recorded: float


@dataclass(frozen=True, slots=True)
class InventoryState:
    """A published inventory: ``stale`` when older than the bound (then its entries are
    unknown to a plan), ``behind`` when a change was made since it was published."""

    provider: str
    proxy: str
    epoch: int
    generation: int | None
    complete: bool
    entries: int
    published: float
    age: float
    stale: bool
    error: str | None
    behind: bool


@dataclass(frozen=True, slots=True)
class SiteStatus:
    """Everything ``xce-status`` shows of one site, at ``now`` (store clock or --as-of)."""

    site: str
    now: float
    settings: ProxySettings
    config: ConfigState | None
    last_apply: LastApply
    proxies: tuple[ProxySeen, ...]
    leases: tuple[LeaseState, ...]
    inventories: tuple[InventoryState, ...]
    queue: tuple[tuple[str, int], ...]  # provider, calls queued or taken
    refusals: int
    drift: tuple[tuple[str, int], ...]  # kind, open drift of that kind
    plans: tuple[WaitingPlan, ...]


def site_key(store: StateStore, given: str | None) -> str:
    """The site to show: ``given``, else the only one with an applied configuration."""
    if given is not None:
        return given
    sites = store.config_sites()
    if len(sites) == 1:
        return sites[0]
    if not sites:
        raise codes.error(codes.WHICH_SITE, f"the store {store.label} holds no applied "
                          "configuration yet: no xce-apply has recorded one in it",
                          "xce-status", "run xce-apply for the site first, or check that "
                          "--state names the site's store")
    raise codes.error(codes.WHICH_SITE, f"the store holds {len(sites)} sites with an applied "
                      f"configuration, so which to show is not clear; sites found: "
                      f"{', '.join(sites)}", "xce-status")


def gather(store: StateStore, site: str, as_of: float | None = None) -> SiteStatus:
    """``site``'s status as ``store`` holds it, aged at ``as_of`` (default: the store's now)."""
    now = store.store_now() if as_of is None else as_of
    applied = store.applied_config(site)
    settings = _settings(site, applied.bindings if applied else None)
    config = None if applied is None else ConfigState(applied.seq, applied.digest,
                                                      applied.applied, applied.applied_by)
    return SiteStatus(
        site, now, settings, config, _last_apply(store, site),
        tuple(ProxySeen(p.proxy, p.instance, p.host, p.pid, p.state, p.started, p.seen)
              for p in store.proxy_instances(site)),
        tuple(_lease(lease, now) for _, lease in sorted(store.provider_leases(site).items())),
        tuple(_inventory(h, now, settings.inventory_max_age)
              for _, h in sorted(store.published_headers(site).items())),
        tuple(sorted(store.queue_depth(site).items())), len(store.refusals(site)),
        _drift_by_kind(store.open_drift(site)),
        tuple(WaitingPlan(p.desired_digest, p.commit, p.branch, p.recorded_at.timestamp())
              for p in store.pending_plans(site)),
    )


def _settings(site: str, bindings: object) -> ProxySettings:
    """The applied bindings' proxy settings (the defaults before any apply)."""
    if bindings is None:
        return ProxySettings()
    try:
        return Bindings.from_json(bindings).proxy_settings
    except BindingError as err:
        raise codes.error(codes.BAD_CONFIG, f"the applied configuration's bindings cannot be "
                          f"read: {err}", site) from None


def _stamp(at: datetime | None) -> float | None:
    return None if at is None else at.timestamp()


def _last_apply(store: StateStore, site: str) -> LastApply:
    applied = store.get_applied(site)
    runs = store.runs(limit=1, prefix=site_runs(site))
    run = runs[0] if runs else None
    return LastApply(
        applied.digest if applied else None, applied.revision if applied else None,
        _stamp(applied.applied if applied else None),
        run.run_id if run else None, run.status.value if run else None,
        _stamp(run.started if run else None), _stamp(run.finished if run else None))


def _lease(lease: ProviderLease, now: float) -> LeaseState:
    if lease.held(now):
        state, since = "held", lease.acquired
    elif lease.expires > 0:
        state, since = "lapsed", lease.expires
    else:
        state, since = "released", None
    return LeaseState(lease.provider, lease.holder, lease.instance, lease.epoch, state, since)


def _inventory(header: PublishedHeader, now: float, max_age: float) -> InventoryState:
    age = max(0.0, now - header.published)
    return InventoryState(header.provider, header.proxy, header.epoch, header.generation,
                          header.complete, header.entry_count, header.published, age,
                          age > max_age, header.error, header.changed is not None)


def _drift_by_kind(entries: list[DriftEntry]) -> tuple[tuple[str, int], ...]:
    """Open drift counted by its entry's kind (``host/a`` is a host; an unknown provider's
    finding, ``provider/fs``, a provider)."""
    kinds = Counter(str(e.detail.get("kind") or _entry_of(e.subject).partition("/")[0])
                    for e in entries)
    return tuple(sorted(kinds.items()))


def _entry_of(subject: str) -> str:
    """The entry id of a drift subject (``category|entry``)."""
    return subject.partition("|")[2] or subject
