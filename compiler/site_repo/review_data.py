"""What a site's reviewers read in its snapshot tests (the pytest plugin's fixtures).

The site is compiled exactly as ``xce-compile`` compiles it; its allowlists, its desired map
and its policy review become plain text, sorted, one fact per line. Every line names its
role, proxy, group or kind, because a snapshot diff (syrupy's in the pytest output, git's in
the pull request) shows a changed line without the lines around it: ``+ role site-monitor
holds job.query (105, job, read)`` must read on its own.
"""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from compiler.compile import Compiled, compile_site, located
from compiler.contract.supply_map import Entry
from compiler.contract.vocabulary import EntryKind
from compiler.core.problems import Problem, Problems, Severity, UserError
from compiler.core.units import format_size
from compiler.policy.compile import (
    BUNDLED,
    GIVEN,
    GUARDRAILS,
    IN_REPOSITORY,
    IN_SITE,
    PolicyBuild,
    compile_sources,
)
from compiler.policy.guardrails import read_guardrails
from compiler.policy.review import Review, diff
from compiler.policy.review_render import VERBS
from compiler.source.yaml_source import SourceFile

# the policies a review compares with, by where the compile found them (no path, no
# version: a snapshot must not change when pytest runs elsewhere or the tool is upgraded)
BASES = {
    BUNDLED: "the bundled policies",
    IN_SITE: "the site folder's policies/",
    IN_REPOSITORY: "the repository's policies/",
    GIVEN: "the given policies",
}


@dataclass(frozen=True, slots=True)
class SiteBuild:
    """A site compiled with its policies: what every fixture is made from."""

    compiled: Compiled
    policy: PolicyBuild  # the allowlists, the policy files read and where they came from
    files: tuple[SourceFile, ...]  # the site's own files
    warnings: tuple[Problem, ...]  # located, for the test run to show

    @property
    def allowlists(self) -> Mapping[str, Any]:
        """The build/allowlists.json document."""
        return self.policy.document


def build_site(site_dir: Path) -> SiteBuild:
    """Compile ``site_dir`` as xce-compile does; its problems, located, are a ``UserError``."""
    problems = Problems()
    compiled, files = compile_site(site_dir, problems)
    shown = located(problems, files)
    if compiled is None or compiled.policy is None or problems.has_errors:
        raise UserError(shown)
    policy_files = {id(s) for s in compiled.policy.sources}
    return SiteBuild(
        compiled,
        compiled.policy,
        tuple(f for f in files if id(f) not in policy_files),
        tuple(p for p in shown if p.severity is Severity.WARNING),
    )


def _lines(lines: Iterable[str]) -> str:
    return "\n".join(lines)


def _opcode(catalog: Mapping[str, Mapping[str, Any]], ref: Mapping[str, Any]) -> str:
    op = catalog[ref["name"]]
    scope = f" for {', '.join(ref['providers'])}" if "providers" in ref else ""
    return f"{op['name']} ({op['id']}, {op['category']}, {op['risk']}){scope}"


def _catalog(doc: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {op["name"]: op for op in doc["catalog"]}


def role_allowlists(doc: Mapping[str, Any]) -> str:
    """Per role: where it is defined, each opcode it holds, each opcode its denies name."""
    catalog = _catalog(doc)
    out: list[str] = []
    for name, role in sorted(doc["roles"].items()):
        out.append(f"role {name} (from the {'site' if role['origin'] == 'site' else 'policies'})")
        out += [f"role {name} holds {_opcode(catalog, ref)}" for ref in role["opcodes"]]
        out += [f"role {name} denies {_opcode(catalog, {'name': op})}" for op in role["denied"]]
    return _lines(out)


def proxy_allowlists(doc: Mapping[str, Any]) -> str:
    """Per proxy instance: its host and providers, and each opcode it holds (scoped ones
    with the providers they are limited to)."""
    catalog = _catalog(doc)
    out: list[str] = []
    for name, proxy in sorted(doc["proxies"].items()):
        serves = ", ".join(proxy["providers"]) or "no provider"
        out.append(f"proxy {name} on {proxy['host']} as role {proxy['role']}, serves {serves}")
        out += [f"proxy {name} holds {_opcode(catalog, ref)}" for ref in proxy["opcodes"]]
    return _lines(out)


def _without_site_policy(files: Iterable[SourceFile]) -> list[SourceFile]:
    """The site's files minus their ``policy:`` sections: the proxies stay, so the base
    scopes the same proxy allowlists."""
    return [
        replace(f, data={k: v for k, v in f.data.items() if k != "policy"})
        if isinstance(f.data, dict)
        else f
        for f in files
    ]


def _review_lines(review: Review) -> Iterator[str]:
    for change in review.changes:
        mark = f"  [escalation: {change.escalation}]" if change.escalation else ""
        head = f"{change.section.value} {change.subject}"
        if change.items:
            yield f"{head} {VERBS[change.what]} {change.detail}{mark}"
        else:
            yield f"{head}: {change.detail}{mark}"


def _guardrail_lines(build: SiteBuild) -> Iterator[str]:
    """Each guardrail of the policies, and the waivers that let a role break it."""
    source = next(s for s in build.policy.sources if s.abspath.name == GUARDRAILS)
    waivers: dict[str, list[Mapping[str, Any]]] = {}
    for w in build.allowlists["waivers"]:
        waivers.setdefault(w["guardrail"], []).append(w)
    for rail in sorted(read_guardrails(source, Problems()).rules, key=lambda r: r.name):
        if rail.name not in waivers:
            yield f"guardrail {rail.name} holds"
        for w in waivers.get(rail.name, []):
            yield (
                f"guardrail {rail.name} waived by {w['name']}: role {w['role']} may hold "
                f"{', '.join(w['opcodes'])} until {w['expires']} ({w['reason']})"
            )


def policy_review(build: SiteBuild) -> str:
    """What the site's ``policy:`` section changes against its policies alone (the bundled
    ones, or the folder the compile used), as ``xce-policy review`` words it, then the
    status of every guardrail."""
    policies = {s.abspath.name: s for s in build.policy.sources}
    base_site = _without_site_policy(build.files)
    base = compile_sources(policies, base_site, Problems(), datetime.date.today())
    review = diff(base, build.allowlists, "policies", "site")
    head = (
        f"the site's policy: against {BASES[build.policy.origin.found]}: "
        f"{len(review.changes)} change(s), {len(review.escalations)} escalation(s)"
    )
    return _lines([head, *_review_lines(review), *_guardrail_lines(build)])


def _size_or_count(entry: Entry, sized: bool) -> str:
    amount = entry.amount or 0
    return format_size(amount) if sized else str(amount)


def _group_lines(entries: Mapping[str, Entry]) -> Iterator[str]:
    per_group = Counter(e.attributes.get("group") for e in entries.values()
                        if e.kind == EntryKind.HOST)
    for e in sorted((e for e in entries.values() if e.kind == EntryKind.HOST_GROUP), key=_by_id):
        name = e.id.removeprefix("host-group/")
        hosts = e.attributes.get("hosts") or "no host"
        by = f", provisioned by {e.attributes['provider']}" if "provider" in e.attributes else ""
        yield f"group {name}: {hosts} ({per_group[name]} desired hosts{by})"
        for key in ("features", "mounts"):
            if e.attributes.get(key):
                yield f"group {name} {key}: {', '.join(e.attributes[key])}"


def _by_id(entry: Entry) -> str:
    return entry.id


def _supply_lines(entries: Mapping[str, Entry]) -> Iterator[str]:
    """Pools, non-host counters, datasets, volumes and quotas: one line per entry."""
    sized_pools = {e.id.removeprefix("storage-pool/") for e in entries.values()
                   if e.kind == EntryKind.STORAGE_POOL}
    for e in sorted(entries.values(), key=_by_id):
        line = _supply_line(e, sized_pools)
        if line is not None:
            yield line


def _supply_line(e: Entry, sized_pools: set[str]) -> str | None:
    """An entry's line, by its kind; None for the kinds other lines show (hosts, groups)."""
    if e.kind in (EntryKind.STORAGE_POOL, EntryKind.VOLUME, EntryKind.DATASET,
                  EntryKind.DATASET_COPY):
        path = f" at {e.spec['path']}" if "path" in e.spec else ""
        return f"{e.id}: {_size_or_count(e, True)}{path} [{e.provider}]"
    if e.kind == EntryKind.LICENSE:
        borrow = f", borrows up to {e.spec['borrow_max']}" if e.spec.get("borrow_max") else ""
        return f"{e.id}: {e.amount} seats{borrow}"
    if e.kind == EntryKind.COUNTER:
        return _counter_line(e)
    if e.kind == EntryKind.VOLUME_DIR:
        return f"{e.id}: owner {e.spec.get('owner')}, mode {e.spec.get('mode')}"
    if e.kind == EntryKind.QUOTA:
        return _quota_line(e, sized_pools)
    return None


def _counter_line(e: Entry) -> str | None:
    """A shared counter's line (a cache's or a volume's counts bytes); None for a host's."""
    location = e.location or ""
    if location.startswith("host/"):
        return None
    sized = e.id.startswith("counter/cache@") or location.startswith("volume/")
    return f"{e.id}: {_size_or_count(e, sized)}"


def _quota_line(e: Entry, sized_pools: set[str]) -> str:
    """A quota's line: bytes on a volume or a sized pool, else a count."""
    location = e.location or ""
    sized = location.startswith("volume/") or location.partition("/")[2] in sized_pools
    return f"{e.id}: {_size_or_count(e, sized)} [{e.provider}]"


def _flat(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    """Nested settings as (dotted key, value) pairs: ``safety.max_changes``."""
    if isinstance(value, Mapping):
        for key, inner in sorted(value.items()):
            yield from _flat(inner, (*path, key))
    else:
        yield ".".join(path), value


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "(none)"
    return str(value).lower() if isinstance(value, bool) else str(value)


def _served(binding: Mapping[str, Any]) -> str:
    """A provider's kind and the proxies that serve it."""
    parts = [binding["kind"]]
    if binding.get("proxy"):
        parts.append(f"active on {binding['proxy']}")
    if binding.get("standbys"):
        parts.append(f"standby on {', '.join(binding['standbys'])}")
    return ", ".join(parts)


def map_summary(build: SiteBuild) -> str:
    """The desired map in brief: entries per kind and per provider, each group's hosts,
    the shared supply entry by entry, and the planning settings."""
    supply = build.compiled.supply_map
    entries = supply.entries
    out = [f"site {supply.site}: {len(entries)} entries, owner {supply.owner}"]
    out += [f"kind {k}: {n}" for k, n in sorted(Counter(e.kind for e in entries.values()).items())]
    held = Counter(e.provider for e in entries.values())
    for name, binding in sorted(build.compiled.bindings.written.items()):
        out.append(f"provider {name} ({_served(binding)}): {held[name]} entries")
    out += _group_lines(entries)
    out += _supply_lines(entries)
    settings = {k: v for k, v in supply.settings.items() if k not in ("site", "owner")}
    out += [f"settings {key}: {_shown(value)}" for key, value in _flat(settings)]
    return _lines(out)
