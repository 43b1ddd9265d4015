"""The compile stage: load → validate → check → emit (→ policies), collecting every problem."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from operator import attrgetter
from pathlib import Path

from compiler.checks.capacity import check_caches, check_quotas, check_warnings
from compiler.checks.collisions import check_copy_ids, check_counter_ids, check_quota_ids
from compiler.checks.discovery import check_discovery
from compiler.checks.drift import check_drift
from compiler.checks.hosts import HostTable, expand_hosts
from compiler.checks.index import build_index
from compiler.checks.providers import (
    check_cache_locations,
    check_provider_kinds,
    check_proxies,
    check_proxy_setting,
)
from compiler.checks.references import check_references
from compiler.checks.secrets import check_secrets
from compiler.checks.topology import check_topology
from compiler.checks.volumes import check_volumes
from compiler.contract.bindings import Bindings
from compiler.contract.drift import CompiledDrift
from compiler.contract.supply_map import SupplyMap
from compiler.core import codes
from compiler.core.problems import Problem, Problems, Where
from compiler.emit.bindings import build_bindings
from compiler.emit.context import EmitContext
from compiler.emit.datasets import copies_by_location, emit_datasets
from compiler.emit.drift import emit_drift
from compiler.emit.hosts import emit_hosts
from compiler.emit.pools import emit_pools
from compiler.emit.settings import emit_settings
from compiler.emit.volumes import emit_volumes, mounts_by_group
from compiler.model.document import SiteDocument, build_document
from compiler.policy import PolicyBuild, compile_policies
from compiler.policy.compile import locate_policies
from compiler.source.yaml_source import (
    Locator,
    SourceFile,
    display_path,
    find_yaml_files,
    load_file,
)


@dataclass(frozen=True, slots=True)
class Compiled:
    supply_map: SupplyMap
    bindings: Bindings
    document: SiteDocument
    policy: PolicyBuild | None = None
    drift: CompiledDrift = field(default_factory=CompiledDrift)  # build/drift.json
    # entry id → the site-config item it came from, located only when asked (--format github)
    sources: Mapping[str, Where] = field(default_factory=dict)


def load_site(site_dir: Path, problems: Problems) -> list[SourceFile]:
    """Every YAML file under the site folder, fast-loaded; unreadable ones become problems."""
    if not site_dir.is_dir():
        problems.error(
            codes.CANNOT_READ,
            f"site folder '{site_dir}' "
            + ("is not a folder" if site_dir.exists() else "does not exist"),
            "give the folder that holds the site-config YAML files",
            subject=str(site_dir),
        )
        return []
    before = len(problems)
    paths = find_yaml_files(site_dir, problems)
    if not paths and len(problems) == before:  # else a folder could not be listed: said so
        problems.error(
            codes.CANNOT_READ,
            f"no YAML files (*.yaml, *.yml) under '{site_dir}'",
            "point xce-compile at the site-config folder",
            subject=str(site_dir),
        )
    files = []
    for path in paths:
        src = load_file(path, display_path(path), problems)
        if src is not None:
            files.append(src)
    return files


def check_document(doc: SiteDocument, problems: Problems) -> HostTable:
    """Every semantic check; returns the expanded hosts, which emit needs too. The order
    matters: check_caches skips locations the reference checks already reported."""
    index = build_index(doc, problems)
    hosts = expand_hosts(doc.host_groups, problems, doc.invalid_items.get(("host_groups",), []))
    check_references(doc, index, hosts, problems)
    check_discovery(doc, index, problems)
    check_quota_ids(doc, problems)
    check_counter_ids(doc, index, hosts, problems)
    check_copy_ids(doc, problems)
    check_provider_kinds(doc, index, problems)
    check_cache_locations(doc, index, problems)
    check_proxies(doc, index, problems)
    check_proxy_setting(doc, index, problems)
    check_secrets(doc, problems)
    check_quotas(doc, index, problems)
    check_caches(doc, index, problems)
    check_warnings(doc, problems)
    check_topology(doc, problems)
    check_volumes(doc, index, hosts, problems)
    return hosts


def compile_files(
    files: list[SourceFile], problems: Problems, complete: bool = True,
    today: datetime.date | None = None, site_dir: Path | None = None,
) -> Compiled | None:
    """Validate and emit; ``complete=False`` (a file did not load) skips cross-file checks,
    whose "unknown name" findings would only echo the unreadable file."""
    doc = build_document(files, problems)
    if not complete:
        return None
    if not doc.site_seen and files:
        problems.error(
            codes.MISSING_KEY,
            "no 'site:' section in any file",
            "add a 'site:' section with at least 'name:' to one file",
            Where(files[0].path, line=1, column=1),
        )
    hosts = check_document(doc, problems)
    check_drift(doc, problems, today or datetime.date.today())
    if problems.has_errors or doc.site is None:
        return None
    site = doc.site.item
    ctx = EmitContext(owner=f"site/{site.name}", controller=doc.controller)
    emit_hosts(doc, site, hosts, mounts_by_group(doc), ctx, copies_by_location(doc))
    emit_pools(doc, ctx)
    emit_datasets(doc, ctx)
    emit_volumes(doc, ctx)
    entries = dict(zip(map(attrgetter("id"), ctx.entries), ctx.entries, strict=True))
    if len(entries) != len(ctx.entries):  # the checks must have caught every clash of ids
        raise RuntimeError(f"{len(ctx.entries) - len(entries)} entries share an id with another")
    settings = emit_settings(site, doc)
    supply = SupplyMap(entries=entries, site=site.name, owner=ctx.owner, settings=settings)
    return Compiled(supply, build_bindings(doc), doc, drift=emit_drift(doc, files, site_dir),
                    sources=ctx.sources())


def located(problems: Problems, files: list[SourceFile]) -> list[Problem]:
    return Locator(files).locate_all(problems)


def compile_site(
    site_dir: Path,
    problems: Problems,
    policies_dir: Path | None = None,
    today: datetime.date | None = None,
) -> tuple[Compiled | None, list[SourceFile]]:
    """Compile a site folder and its opcode allowlists, with the policies of ``policies_dir``
    (--policies) or else those ``locate_policies`` finds for the site: every compile has them.

    The returned files include the policy files, so the Locator can place their problems.
    """
    before = len(problems)
    files = load_site(site_dir, problems)
    complete = len(problems) == before
    today = today or datetime.date.today()
    compiled = compile_files(files, problems, complete, today, site_dir) if files else None
    if not complete:
        return compiled, files
    policies = locate_policies(site_dir, policies_dir)
    build = compile_policies(policies, files, problems, today)
    all_files = [*files, *build.sources]
    if compiled is None or problems.has_errors:
        return None, all_files
    return replace(compiled, policy=build), all_files
