"""The stages that xce-plan and xce-apply share: desired map, live map, plan.

Each function reads what its stage needs (the compiled files or the site folder, the
providers or a live snapshot, the state store's generations) and returns plain data; the
CLIs only parse arguments, call these, render and choose an exit code.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compiler.contract.bindings import BindingError, Bindings
from compiler.contract.build_files import ALLOWLISTS, BINDINGS, DRIFT, WORKDIR
from compiler.contract.drift import CompiledDrift, DriftFileError
from compiler.contract.supply_map import KnownEntries, MapReader, SupplyMap, read_json, read_map
from compiler.core.gc_pause import gc_paused
from compiler.core.problems import Hints, Problem, Problems, Severity, UserError, Where
from reconciler.dataset_versions import VersionSources, enforce_versions, explain_corrections
from reconciler.live import HINTS as LIVE_HINTS
from reconciler.live import (
    SNAPSHOT_UNREPORTED,
    LiveResult,
    LossLimit,
    gather_live,
    load_live_snapshot,
    other_site_problem,
    trust_generations,
)
from reconciler.plan.attempts import ProvisionAttempts
from reconciler.plan.census import Census
from reconciler.plan.model import Plan
from reconciler.planner import make_plan
from reconciler.planner.guards import Growth
from reconciler.planner.settings import read_settings
from reconciler.relay import Relay, config_problems
from reconciler.state import StateStore

if TYPE_CHECKING:  # the YAML reader is imported only where a site is compiled
    from compiler.source.yaml_source import Locator

# the problem codes, named once as in reconciler/apply/codes.py
NOT_COMPILED = "XCE780"  # a file xce-compile writes is unreadable or not its format
NO_SITE = "XCE781"
HINTS = Hints({
    NOT_COMPILED: "compile it again with xce-compile",
    NO_SITE: "pass the site-config folder or --desired FILE",
})


@dataclass(frozen=True, slots=True)
class Desired:
    """The desired map with the bindings that say how to reach each provider."""

    supply: SupplyMap
    bindings: Bindings
    digest: str
    warnings: tuple[Problem, ...] = ()
    versions: VersionSources | None = None  # where datasets are written (not from a map file)
    # build/drift.json: how xce-drift screens and mails drift (compiler/contract/drift.py)
    drift: CompiledDrift = field(default_factory=CompiledDrift)
    origins: Origins | None = None  # where each entry is written (not from a map file)
    # the ``proxies`` section of allowlists.json: each proxy's scoped opcodes, which an apply
    # records with the bindings as the config the proxies follow (reconciler/relay/config.py)
    proxy_allowlists: Mapping[str, Any] = field(default_factory=dict)
    # the map file's entries by their bytes: a live snapshot is read against them
    known: KnownEntries | None = None


@dataclass(frozen=True, slots=True)
class Origins:
    """Where each desired entry is written in the site-config: its item's YAML path, put on
    a line only when a rendering asks (--format github), so a plain plan composes no file."""

    sources: Mapping[str, Where]
    locator: Locator
    site: Where | None = None  # the ``site:`` section: where its settings are written
    _placed: dict[int, Where] = field(default_factory=dict)  # by id: entries share items

    def place(self, entry_id: str) -> Where | None:
        """The file, line and column of the item ``entry_id`` came from; None if it is not
        in the config (any more)."""
        where = self.sources.get(entry_id)
        if where is None:
            return None
        placed = self._placed.get(id(where))
        if placed is None:
            placed = self._placed[id(where)] = self.locator.locate(where)
        return placed

    def setting(self, key: str) -> Where | None:
        """The file, line and column of the ``site:`` section's ``key``."""
        return None if self.site is None else self.locator.locate(self.site.child(key).at_key())


@dataclass(frozen=True, slots=True)
class Live:
    supply: SupplyMap
    problems: tuple[Problem, ...] = field(default_factory=tuple)
    census: Census | None = None  # ``supply``'s counts, when trusting it made them


def default_workdir(site_dir: Path | None, desired_file: Path | None) -> Path:
    """The embedded defaults live beside the site (``<site>/.xce``) unless told otherwise."""
    if site_dir is not None:
        return site_dir / WORKDIR
    if desired_file is not None:
        return desired_file.parent / WORKDIR
    return Path(WORKDIR)


def _compiled_reader(path: Path, what: str) -> MapReader:
    """The problems of a file xce-compile writes (the map, its bindings): XCE780."""
    def problem(message: str, hint: str | None = None) -> Problem:
        return HINTS.problem(NOT_COMPILED, message, str(path), hint)

    return MapReader(
        unreadable=lambda err: problem(f"cannot read the {what}: {err.strerror}",
                                       "run xce-compile first, or pass the site folder"),
        not_json=lambda err: problem(f"the {what} is not valid JSON: {err}"),
        malformed=lambda err: problem(f"the {what} is not as xce-compile writes it ({err})",
                                      "pass build/supply-map.json written by xce-compile"),
    )


def _read_bindings(path: Path, site: Path) -> Bindings:
    reader = _compiled_reader(path, "bindings")
    try:
        return Bindings.from_json(read_json(path, reader), site)
    except BindingError as err:
        raise UserError([reader.malformed(err)]) from err


def _read_drift(path: Path) -> CompiledDrift:
    """The drift settings beside the map; none (no rules, no email) beside a map compiled
    before drift.json existed."""
    if not path.exists():
        return CompiledDrift()
    try:
        return CompiledDrift.from_json(read_json(path, _compiled_reader(path, "drift settings")))
    except DriftFileError as err:
        raise UserError([HINTS.problem(
            NOT_COMPILED, f"the drift settings are not as xce-compile writes them: {err}",
            str(path))]) from None


def load_compiled(desired_file: Path) -> Desired:
    """A map written by xce-compile, with ``bindings.json`` beside it.

    The map's own ``digest`` is used as it is: recomputing it takes a second at 500,000
    entries. The cyclic GC is paused: it finds nothing among a million new objects.
    """
    with gc_paused():
        decoded = read_map(desired_file, _compiled_reader(desired_file, "compiled supply map"),
                           index=True)
    supply = decoded.supply
    # Without the site folder, site-relative inputs resolve against the current folder.
    bindings = _read_bindings(desired_file.parent / BINDINGS, Path.cwd())
    return Desired(supply, bindings, str(decoded.header.get("digest") or supply.content_digest()),
                   drift=_read_drift(desired_file.parent / DRIFT),
                   proxy_allowlists=_read_proxy_allowlists(desired_file.parent / ALLOWLISTS),
                   known=decoded.known)


def _read_proxy_allowlists(path: Path) -> Mapping[str, Any]:
    """The ``proxies`` section of the allowlists beside the map; none beside a map compiled
    without them."""
    if not path.exists():
        return {}
    doc = read_json(path, _compiled_reader(path, "allowlists"))
    proxies = doc.get("proxies", {}) if isinstance(doc, Mapping) else None
    if not isinstance(proxies, Mapping):
        raise UserError([HINTS.problem(
            NOT_COMPILED, "the allowlists have no 'proxies' object", str(path))])
    return proxies


def compile_desired(site_dir: Path, policies: Path | None = None) -> Desired:
    """Compile the site (with ``policies``: --policies, else the folder docs/policies.md says)."""
    problems = Problems()
    # Imported here: the language models and gitpython cost 0.2 s of start-up that a plan
    # from a compiled map (--desired) does not need.
    from compiler.compile import compile_site, located
    from compiler.core.git import site_revision
    from compiler.source.yaml_source import Locator

    compiled, files = compile_site(site_dir, problems, policies)
    shown = located(problems, files)
    if compiled is None or any(p.severity is Severity.ERROR for p in shown):
        raise UserError(shown)
    revision = site_revision(site_dir)
    s = compiled.supply_map
    supply = SupplyMap(entries=s.entries, site=s.site, owner=s.owner, revision=revision.commit,
                       dirty=revision.dirty, settings=s.settings)
    bindings = compiled.bindings.at(site_dir)
    return Desired(supply, bindings, supply.content_digest(), tuple(shown),
                   VersionSources.of(compiled.document, files), compiled.drift,
                   Origins(compiled.sources, Locator(files),
                           None if compiled.document.site is None
                           else compiled.document.site.where),
                   {} if compiled.policy is None else compiled.policy.document.get("proxies", {}))


def load_desired(site_dir: Path | None, desired_file: Path | None,
                 policies: Path | None = None) -> Desired:
    if desired_file is not None:
        return load_compiled(desired_file)
    if site_dir is None:
        raise UserError([HINTS.problem(NO_SITE, "no site given")])
    return compile_desired(site_dir, policies)


def unreported(live: Live) -> list[Problem]:
    """The providers a live-map snapshot lists as unknown, as warnings: they explain why
    ``xce-plan --live FILE`` exits 1 although the file itself is sound."""
    return [LIVE_HINTS.problem(SNAPSHOT_UNREPORTED, f"the live map says provider {name} did "
                               f"not report: {why}", name, severity=Severity.WARNING)
            for name, why in sorted(live.supply.unknown.items())]


def gather(desired: Desired, workdir: Path, live_file: Path | None = None,
           only: Collection[str] | None = None, *, store: StateStore | None = None,
           accept: Collection[str] = (), accept_shrink: Collection[str] = (),
           record_accepted: bool = True, relay: Relay | None = None) -> Live:
    """The live map from a snapshot file, or from every bound provider (in parallel).

    A proxied provider is read from what its proxy published, through ``relay`` — by
    default the ``store``'s, for a site with proxied providers; the plan then also says
    when the proxies follow no applied config, or another one (``config_problems``).

    With a state ``store``, a provider whose generation went down since the store last
    recorded it is unknown, and so is one whose inventory lost more than the site's
    ``safety.max_inventory_loss`` since the last trusted read; a live gather's generations
    and counts are recorded (``accept``: providers replaced on purpose, whose lower
    generation is recorded; ``accept_shrink``: providers whose loss is real, their counts
    recorded only with ``record_accepted``, as an apply does; docs/plan.md)."""
    if live_file is not None:
        with gc_paused():  # as for the desired map: a million new objects, no cycles
            found = LiveResult(load_live_snapshot(live_file, desired.known))
        other_site = other_site_problem(found.live, desired.supply, str(live_file))
        if other_site is not None:
            raise UserError([other_site])
    else:
        relay = relay or Relay.of(desired.bindings, desired.supply.site_key, store)
        found = gather_live(desired.bindings, workdir, desired.supply.owner, only=only,
                            relay=relay)
        if relay is not None:
            found = replace(found, problems=(*found.problems, *config_problems(
                relay, desired.bindings, desired.proxy_allowlists)))
    return checked_live(desired, found, store, gathered=live_file is None, accept=accept,
                        accept_shrink=accept_shrink, record_accepted=record_accepted)


def loss_limit(desired: Desired) -> LossLimit:
    """What each provider may lose between two reads (``site.safety.max_inventory_loss``)."""
    return read_settings(desired.supply.settings, desired.supply.owner).safety.loss_limit


def checked_live(desired: Desired, found: LiveResult, store: StateStore | None, *,
                 gathered: bool, accept: Collection[str] = (),
                 accept_shrink: Collection[str] = (), record_accepted: bool = True) -> Live:
    """``found`` checked against what ``store`` remembers of earlier reads (generations,
    counts), and what a live gather (``gathered``) trusted recorded there."""
    if store is None and not accept and not accept_shrink:
        return Live(found.live, tuple(found.problems))
    site = desired.supply.site_key
    checked = trust_generations(found.live, store, site, gathered=gathered, accept=accept,
                                shrink=loss_limit(desired), accept_shrink=accept_shrink,
                                record_accepted=record_accepted)
    return Live(checked.live, (*found.problems, *checked.problems), checked.census)


def recorded_attempts(store: StateStore | None,
                      desired: Desired) -> dict[str, ProvisionAttempts]:
    """The provisioning failures the state store recorded for this site (P6, the backoff
    of ``plan_for``); none without a store."""
    if store is None:
        return {}
    return store.provision_attempts(desired.supply.site_key)


def plan_for(desired: Desired, live: Live, *, now: float, targets: Collection[str] = (),
             destroy: bool = False, force: bool = False,
             applied_before: bool | None = None,
             attempts: Mapping[str, ProvisionAttempts] | None = None,
             accepted_shrink: Collection[str] = (), growth: Growth | None = None,
             accept_growth: Collection[str] = ()) -> Plan:
    """Raises UserError when an applied dataset version would change (dataset_versions).
    ``accepted_shrink`` (``xce-plan --accept-shrink``) is kept in the plan, so the apply
    that checks it against the providers accepts the same losses; ``growth`` and
    ``accept_growth`` (``--base``, ``--accept-growth``) go to the guards (make_plan)."""
    corrections = enforce_versions(desired.supply, live.supply, desired.versions)
    with gc_paused():  # a view per compared entry: the collector would rescan both maps
        plan = make_plan(desired.supply, live.supply, now=now, targets=targets,
                         destroy=destroy, force=force, desired_digest=desired.digest,
                         applied_before=applied_before, attempts=attempts, growth=growth,
                         accept_growth=accept_growth, census=live.census)
    if accepted_shrink:
        plan = replace(plan, accepted_shrink=tuple(sorted(set(accepted_shrink))))
    return explain_corrections(plan, corrections)
