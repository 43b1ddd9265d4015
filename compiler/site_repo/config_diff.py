"""What a change of site-config changes in the desired map and the allowlists, as plain data:
entries added, removed and changed (with their fields), the planning settings, and each
role's and proxy's opcodes gained and lost (the policy review), for ``xce-plan --base``.

The maps are compared per id, never deep-diffed whole: an entry in both is compared by its
canonical JSON (the bytes the desired digest is made of, so ``1`` and ``true`` differ), and
only the few that differ are walked field by field. Desired maps hold secrets only by
reference, and so does this.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from compiler.contract.supply_map import Entry, SupplyMap
from compiler.core.canonical import dumps_compact
from compiler.core.problems import Problem, Severity
from compiler.policy.review import Review, diff

if TYPE_CHECKING:  # the compiler and gitpython: not for reading a diff
    from compiler.site_repo.site_at import SiteAt

_ABSENT = object()
NOTED_PROBLEMS = 3  # a base that does not compile: the first problems named in its note


@dataclass(frozen=True, slots=True)
class FieldChange:
    """One field that differs: a dotted path (``attributes.features``; a list is one field,
    shown whole) and both values, None where the field is absent."""

    path: str
    before: Any
    after: Any

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "before": self.before, "after": self.after}


@dataclass(frozen=True, slots=True)
class EntryChange:
    """An entry in both maps whose canonical JSON differs (``entry`` as at the head)."""

    entry: Entry
    fields: tuple[FieldChange, ...]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.entry.id, "kind": self.entry.kind,
                "fields": [f.to_json() for f in self.fields]}


@dataclass(frozen=True, slots=True)
class EntriesDiff:
    """Each list sorted by id."""

    added: tuple[Entry, ...] = ()
    removed: tuple[Entry, ...] = ()
    changed: tuple[EntryChange, ...] = ()

    def __len__(self) -> int:
        return len(self.added) + len(self.removed) + len(self.changed)


@dataclass(frozen=True, slots=True)
class ConfigDiff:
    """The head's config against the base revision ``base`` (as given, e.g. origin/main),
    which names ``commit``. ``entries`` is None when they could not be compared (the base
    does not compile: ``notes`` say so); ``review`` is None when the allowlists were not."""

    base: str
    commit: str
    head: str
    entries: EntriesDiff | None
    settings: tuple[FieldChange, ...] = ()
    review: Review | None = None
    notes: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """``origin/main, abc123def456``: the revision as given and the commit it names."""
        short = self.commit[:12]
        return short if self.commit.startswith(self.base) else f"{self.base}, {short}"

    @property
    def has_changes(self) -> bool:
        return bool(self.entries or self.settings or (self.review and self.review.changes))

    def to_json(self) -> dict[str, Any]:
        entries = self.entries or EntriesDiff()
        review = self.review
        return {
            "base": {"rev": self.base, "commit": self.commit},
            "head": self.head,
            "compared": self.entries is not None,
            "summary": {"added": len(entries.added), "removed": len(entries.removed),
                        "changed": len(entries.changed), "settings": len(self.settings),
                        "opcodes": len(review.changes) if review else 0,
                        "escalations": len(review.escalations) if review else 0},
            "added": [e.id for e in entries.added],
            "removed": [e.id for e in entries.removed],
            "changed": [c.to_json() for c in entries.changed],
            "settings": [f.to_json() for f in self.settings],
            "opcodes": None if review is None else {
                "status": review.status, "escalations": len(review.escalations),
                "changes": [c.to_json() for c in review.changes]},
            "notes": list(self.notes),
        }


def field_changes(before: Mapping[str, Any], after: Mapping[str, Any],
                  prefix: str = "") -> list[FieldChange]:
    """The fields that differ, by dotted path, sorted: mappings are walked, anything else
    (a list, a number) compared whole by its canonical JSON."""
    out: list[FieldChange] = []
    for key in sorted(before.keys() | after.keys()):
        old, new = before.get(key, _ABSENT), after.get(key, _ABSENT)
        path = f"{prefix}{key}"
        if isinstance(old, Mapping) and isinstance(new, Mapping):
            out += field_changes(old, new, f"{path}.")
        elif old is _ABSENT or new is _ABSENT or dumps_compact(old) != dumps_compact(new):
            out.append(FieldChange(path, None if old is _ABSENT else old,
                                   None if new is _ABSENT else new))
    return out


def diff_entries(base: Mapping[str, Entry], head: Mapping[str, Entry]) -> EntriesDiff:
    """One pass over each map: a dict lookup and, for an id in both, one comparison of
    canonical bytes; fields only for the entries that differ."""
    added: list[Entry] = []
    changed: list[EntryChange] = []
    for key, new in head.items():
        old = base.get(key)
        if old is None:
            added.append(new)
        elif old is not new:
            before, after = old.to_json(), new.to_json()
            if dumps_compact(before) != dumps_compact(after):
                changed.append(EntryChange(new, tuple(field_changes(before, after))))
    removed = [old for key, old in base.items() if key not in head]
    return EntriesDiff(tuple(sorted(added, key=_id)), tuple(sorted(removed, key=_id)),
                       tuple(sorted(changed, key=lambda c: c.entry.id)))


def _id(entry: Entry) -> str:
    return entry.id


def host_group(entry: Entry) -> str | None:
    """The host group an entry belongs to (a host's or instance's ``group`` attribute)."""
    group = entry.attributes.get("group")
    return group if isinstance(group, str) else None


def _problem_line(p: Problem) -> str:
    place = p.where.label() if p.where is not None else (p.subject or "<site>")
    return f"{place}: {p.severity.value}[{p.code}]: {p.message}"


def _base_notes(base: SiteAt, label: str) -> list[str]:
    """What the reader must know about the base: new, not compiling, or other policies."""
    errors = [p for p in base.problems if p.severity is Severity.ERROR]
    if not base.present:
        return [f"the site folder {base.folder} holds no site-config at {label}: every "
                "entry is new"]
    if base.supply is None:
        first = "; ".join(_problem_line(p) for p in errors[:NOTED_PROBLEMS])
        more = f" and {len(errors) - NOTED_PROBLEMS} more" if len(errors) > NOTED_PROBLEMS else ""
        return [f"the site does not compile at {label} ({len(errors)} error(s): {first}{more}): "
                "its entries are not compared; the allowlists are compared with what "
                "compiled there"]
    if errors:  # the entries compiled: these are the allowlists'
        return [f"{len(errors)} problem(s) in the allowlists at {label}: compared with what "
                "compiled there"]
    return []


def config_diff(base: SiteAt, rev: str, head: SupplyMap, head_allowlists: Mapping[str, Any]
                | None, head_label: str, notes: tuple[str, ...] = ()) -> ConfigDiff:
    """The head's desired map and allowlists against ``base``, compiled at ``rev``."""
    shown = ConfigDiff(rev, base.commit, head_label, None)
    label = shown.label
    entries: EntriesDiff | None = None
    settings: tuple[FieldChange, ...] = ()
    if base.supply is not None:
        entries = diff_entries(base.supply.entries, head.entries)
        settings = tuple(field_changes(base.supply.settings, head.settings))
    elif not base.present:  # a new site: everything is added
        entries = diff_entries({}, head.entries)
    review = None
    if base.allowlists is not None and head_allowlists is not None:
        review = diff(base.allowlists, head_allowlists, label, head_label)
    return ConfigDiff(rev, base.commit, head_label, entries, settings, review,
                      (*_base_notes(base, label), *notes))
