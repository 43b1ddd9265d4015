"""Datasets are immutable (PR-5): an applied ``name@version`` keeps its digest and size.

A change of either is a new version. Jobs pinned to ``imagenet@3`` must never get other
bytes, so xce-plan and xce-apply refuse a site whose digest or size of an applied version
differs from what the cluster has, at the place in ``datasets.yaml`` — unless the admin
marks it as a correction, with a reason and the version it replaces; the plan then shows
that reason on the update and the re-stages.

*Applied* is what the cluster has, read from the live map: the dataset's entry in the
controller map (what a job pinned to the version resolves to: digest and size), or, when
that entry is gone, the copies staged under the name (each has the digest it was staged
with). The state store is not asked: it keeps only the digest of the last applied map, not
the entries, and a version applied by another site or by hand is in no store of ours. A
provider that would tell and did not report is said to be unknown, never taken as
"nothing applied".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from compiler.contract.supply_map import Entry, SupplyMap
from compiler.contract.vocabulary import EntryKind
from compiler.core.problems import Problem, UserError, Where
from compiler.core.units import format_size
from reconciler.plan.model import Action, Plan, Verb

if TYPE_CHECKING:
    from compiler.model.document import SiteDocument
    from compiler.source.yaml_source import SourceFile

CHANGED = "XCE790"  # an applied version's digest or size changed
MISMATCHED = "XCE791"  # a correction names another version than the applied one

_DATASET = f"{EntryKind.DATASET}/"
_COPY = f"{EntryKind.DATASET_COPY}/"


@dataclass(frozen=True, slots=True)
class VersionSources:
    """Where each dataset version is written, so a refusal points at its digest or size."""

    places: Mapping[str, Where]  # dataset entry id -> its item in a datasets: list
    files: tuple[SourceFile, ...] = ()

    @classmethod
    def of(cls, doc: SiteDocument, files: Iterable[SourceFile]) -> VersionSources:
        """Only the files that hold datasets, without their loaded data (it is not kept
        for the whole plan: a refusal parses its file again, with marks)."""
        places = {_DATASET + d.item.ident: d.where for d in doc.datasets}
        held = {w.file for w in places.values()}
        return cls(places, tuple(replace(f, data=None) for f in files if f.path in held))

    def locate(self, problems: Iterable[Problem]) -> list[Problem]:
        """``file:line:column`` for each problem; only the files with one are parsed again."""
        from compiler.source.yaml_source import Locator  # ruamel: not needed on the usual path

        return Locator(self.files).locate_all(problems)


@dataclass(frozen=True, slots=True)
class _Held:
    """One thing the cluster holds of a version: its digest, its size if it tells one."""

    digest: str | None
    size: int | None
    by: str  # who holds it, for the message
    foreign: str | None = None  # who owns a record this site does not: it cannot correct it

    def describe(self) -> str:
        parts = [] if self.digest is None else [f"digest {self.digest}"]
        if self.size is not None:
            parts.append(f"size {size_text(self.size)}")
        return f"{' and '.join(parts)} ({self.by})"


@dataclass(frozen=True, slots=True)
class _Correction:
    reason: str
    digest: str | None
    size: int | None


@dataclass(frozen=True, slots=True)
class _Version:
    """A desired version and what the live map says the cluster holds of it."""

    entry: Entry
    ident: str
    digest: str | None
    held: tuple[_Held, ...]
    correction: _Correction | None


def size_text(n: int) -> str:
    """A size as site-config can write it back exactly: ``150GiB``, else plain bytes."""
    text = format_size(n)
    return str(n) if "." in text else text


def _correction(spec: Mapping[str, Any]) -> _Correction | None:
    doc = spec.get("correction")
    if not isinstance(doc, Mapping):
        return None
    replaces = doc.get("replaces")
    replaces = replaces if isinstance(replaces, Mapping) else {}
    digest, size = replaces.get("digest"), replaces.get("size")
    return _Correction(str(doc.get("reason", "")), digest if isinstance(digest, str) else None,
                       size if isinstance(size, int) else None)


def copy_ident(copy_id: str) -> str:
    """``name@version`` of a copy id ``dataset-copy/<name>@<version>@<location>``."""
    return copy_id[len(_COPY):].rsplit("@", 1)[0]  # a location has no '@'


@dataclass(slots=True)
class _Staged:
    """The live copies per ``name@version``, indexed on first need: a version whose record
    the live map has needs no copy, so the usual plan never walks the live map for them."""

    live: SupplyMap
    index: dict[str, list[Entry]] | None = None

    def of(self, ident: str) -> list[Entry]:
        if self.index is None:
            self.index = {}
            for e in self.live.entries.values():
                if e.kind == EntryKind.DATASET_COPY and e.id.startswith(_COPY):
                    self.index.setdefault(copy_ident(e.id), []).append(e)
        return self.index.get(ident, [])


def _trusted(live: SupplyMap, e: Entry) -> bool:
    """Not of a provider that did not report, nor an id two providers claim: a gathered map
    leaves those out, and a snapshot that carries them is not believed (nor by the planner)."""
    return e.provider not in live.unknown and e.id not in live.unknown_entries


def _held(entry: Entry, live: SupplyMap, copies: _Staged, ident: str) -> tuple[_Held, ...]:
    """The version's record (its entry in the controller map) when the live map has it;
    otherwise — gone, or its provider did not report — the copies staged under the name.

    The record is what a pinned job resolves: a copy that disagrees with it is a bad copy,
    which the planner re-stages. Without the record, each known copy tells what was applied.
    """
    record = live.entries.get(entry.id)
    if record is not None and _trusted(live, record):
        digest = record.spec.get("digest")
        # A record of another owner (or none) is never updated by this site: not ours to fix.
        foreign = None if record.owner == entry.owner else (record.owner or "no owner tag")
        return (_Held(digest if isinstance(digest, str) else None, record.amount,
                      f"{entry.id} at provider {record.provider}", foreign),)
    return tuple(
        _Held(c.spec["digest"], None, f"its copy at {c.location} (provider {c.provider})")
        for c in copies.of(ident) if isinstance(c.spec.get("digest"), str) and _trusted(live, c)
    )


def _versions(desired: SupplyMap, live: SupplyMap) -> list[_Version]:
    copies = _Staged(live)
    out = []
    for e in desired.entries.values():
        if e.kind != EntryKind.DATASET or not e.id.startswith(_DATASET):
            continue
        ident = e.id[len(_DATASET):]
        digest = e.spec.get("digest")
        out.append(_Version(e, ident, digest if isinstance(digest, str) else None,
                            _held(e, live, copies, ident), _correction(e.spec)))
    return out


def _differ(held: Iterable[_Held], digest: str | None, size: int | None) -> list[str]:
    """The fields (``digest``, ``size``) in which what is held differs from these values."""
    held = list(held)
    fields = []
    if any(h.digest is not None and h.digest != digest for h in held):
        fields.append("digest")
    if any(h.size is not None and size is not None and h.size != size for h in held):
        fields.append("size")
    return fields


@dataclass(frozen=True, slots=True)
class _Finding:
    code: str
    message: str
    hint: str
    at: tuple[tuple[str | int, ...], ...]  # YAML paths inside the dataset item, first = where


def _correction_text(v: _Version, h: _Held) -> str:
    size = size_text(h.size if h.size is not None else v.entry.amount or 0)
    digest = h.digest or v.digest
    return f'correction: {{reason: "<why>", replaces: {{digest: {digest}, size: {size}}}}}'


def _changed(v: _Version, differing: list[_Held]) -> _Finding:
    fields = _differ(differing, v.digest, v.entry.amount)
    name = v.ident.rsplit("@", 1)[0]
    applied = "; ".join(h.describe() for h in differing)
    owner = differing[0].foreign
    fix = (f"correct it in place by adding to this dataset: {_correction_text(v, differing[0])}"
           if owner is None else f"only its owner ({owner}) can correct it in place; this "
           "site never changes that entry")
    return _Finding(
        CHANGED,
        f"{v.ident} was applied with {applied}: a name@version is immutable, so its "
        f"{' and '.join(fields)} cannot change",
        f"to publish other data, add a new version of {name} (another 'version:', its digest "
        f"from xce-digest PATH) and move the copies to it; if the applied version itself is "
        f"wrong, {fix}",
        tuple((f,) for f in fields),
    )


def _mismatched(v: _Version, c: _Correction, differing: list[_Held]) -> _Finding:
    named = f"digest {c.digest}" + ("" if c.size is None else f" and size {size_text(c.size)}")
    return _Finding(
        MISMATCHED,
        f"the correction of {v.ident} replaces {named}, but {v.ident} was applied with "
        + "; ".join(h.describe() for h in differing),
        "a correction names the version it replaces exactly as applied: "
        f"{_correction_text(v, differing[0])}. Once a correction is applied, a further change "
        "needs a new one (or, better, a new version)",
        tuple(("correction", "replaces", f) for f in _differ(differing, c.digest, c.size)),
    )


def _judge(v: _Version) -> _Finding | str | None:
    """A refusal, the reason of a correction in effect, or None (nothing changes)."""
    differing = [h for h in v.held if _differ((h,), v.digest, v.entry.amount)]
    if not differing:
        return None
    c = v.correction
    if c is None or differing[0].foreign is not None:  # a record is all that is held
        return _changed(v, differing)
    if not _differ(differing, c.digest, c.size):
        return c.reason
    return _mismatched(v, c, differing)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the check found: refusals, and the corrections in effect (ident -> reason)."""

    refusals: tuple[Problem, ...]
    corrections: Mapping[str, str]


def _problem(v: _Version, f: _Finding, sources: VersionSources | None) -> Problem:
    item = sources.places.get(v.entry.id) if sources is not None else None
    if item is None:  # a compiled map: no file to point at, the entry is named instead
        return Problem(f.code, f.message, f.hint, subject=v.entry.id)
    first, *rest = (item.child(*path) for path in f.at)
    return Problem(f.code, f.message, f.hint, first, also=tuple(rest))


def check_versions(desired: SupplyMap, live: SupplyMap,
                   sources: VersionSources | None = None) -> Verdict:
    """Every desired dataset version against what the live map says was applied."""
    refusals: list[Problem] = []
    corrections: dict[str, str] = {}
    for v in _versions(desired, live):
        found = _judge(v)
        if isinstance(found, str):
            corrections[v.ident] = found
        elif found is not None:
            refusals.append(_problem(v, found, sources))
    located = sources.locate(refusals) if sources is not None and refusals else refusals
    return Verdict(tuple(located), corrections)


def enforce_versions(desired: SupplyMap, live: SupplyMap,
                     sources: VersionSources | None = None) -> Mapping[str, str]:
    """The corrections in effect; raises UserError (exit 1) when a version would change."""
    verdict = check_versions(desired, live, sources)
    if verdict.refusals:
        raise UserError(verdict.refusals)
    return verdict.corrections


def _explained(a: Action, corrections: Mapping[str, str]) -> Action:
    if a.kind == EntryKind.DATASET and a.verb is Verb.UPDATE:
        why = corrections.get(a.entry[len(_DATASET):])
        return a if why is None else replace(a, reason=f"corrected in place: {why}; {a.reason}")
    if a.kind == EntryKind.DATASET_COPY and a.verb is Verb.STAGE and a.before is not None:
        ident = copy_ident(a.entry)
        why = corrections.get(ident)
        return a if why is None else replace(a, reason=f"{a.reason}; {ident} corrected: {why}")
    return a


def explain_corrections(plan: Plan, corrections: Mapping[str, str]) -> Plan:
    """The plan with each correction's reason on the actions it causes: the dataset's update
    and the re-stage of its copies."""
    if not corrections:
        return plan
    return replace(plan, actions=tuple(_explained(a, corrections) for a in plan.actions))
