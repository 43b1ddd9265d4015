"""The parents of an entry: the entries it needs to exist first.

A parent (volume, host group, host, dataset) is created before what lives in or on it and
removed after it. The planner orders actions by this, and a view of the plan shows what a
removal takes with it; both read it here, with the plan's data, so no view imports the planner.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from compiler.contract.supply_map import Entry
from compiler.contract.vocabulary import EntryKind

_LOCATION_PARENTS = {
    "host": ("host/",),
    "group": ("host-group/",),
    "pool": ("storage-pool/", "license/"),
    "volume": ("volume/",),
}


def _location_parents(location: str | None) -> list[str]:
    if not location:
        return []
    prefix, _, name = location.partition("/")
    ids = [p + name for p in _LOCATION_PARENTS.get(prefix, ())]
    return [i + "@site" if i.startswith("license/") else i for i in ids]


def _in_group(group: object) -> list[str]:
    return [f"host-group/{group}"] if group else []


# A kind's own parents, from the entry's (name, location, attributes, spec).
_OfKind = Callable[[str, str | None, Mapping[str, Any], Mapping[str, Any]], list[str]]


def _of_host(name: str, location: str | None, attributes: Mapping[str, Any],
             spec: Mapping[str, Any]) -> list[str]:
    return [*_in_group(attributes.get("group")), f"instance/{name}"]


def _of_instance(name: str, location: str | None, attributes: Mapping[str, Any],
                 spec: Mapping[str, Any]) -> list[str]:
    return _in_group(spec.get("group"))


def _of_volume_dir(name: str, location: str | None, attributes: Mapping[str, Any],
                   spec: Mapping[str, Any]) -> list[str]:
    return ["volume/" + name.partition("/")[0]]


def _of_job_dir(name: str, location: str | None, attributes: Mapping[str, Any],
                spec: Mapping[str, Any]) -> list[str]:
    """job-dir/<volume>/<user>/<job>: evicted before its user dir goes."""
    return ["volume-dir/" + name.rpartition("/")[0]]


def _of_quota(name: str, location: str | None, attributes: Mapping[str, Any],
              spec: Mapping[str, Any]) -> list[str]:
    target, scope, subject = [*name.split("/", 2), "", ""][:3]
    out = []
    if location is None:
        out.append(f"volume/{target}")
    if scope == "user" and (location is None or location.startswith("volume/")):
        out.append(f"volume-dir/{target}/{subject}")
    return out


def _of_dataset_copy(name: str, location: str | None, attributes: Mapping[str, Any],
                     spec: Mapping[str, Any]) -> list[str]:
    dataset = spec.get("dataset") or "@".join(name.split("@")[:2])
    return [f"dataset/{dataset}"]


_BY_KIND: dict[str, _OfKind] = {
    EntryKind.HOST: _of_host,
    EntryKind.INSTANCE: _of_instance,
    EntryKind.VOLUME_DIR: _of_volume_dir,
    EntryKind.JOB_DIR: _of_job_dir,
    EntryKind.QUOTA: _of_quota,
    EntryKind.DATASET_COPY: _of_dataset_copy,
}


# location -> the ids of its parents: many entries share a location (a host's counters)
Parents = dict[str | None, list[str]]


def _parents(entry_id: str, kind: str, location: str | None, attributes: Mapping[str, Any],
             spec: Mapping[str, Any], memo: Parents | None = None) -> list[str]:
    name = entry_id.partition("/")[2]
    if location is None and "@" in name and kind == EntryKind.COUNTER:
        location = name.partition("@")[2]
    here = None if memo is None else memo.get(location)
    if here is None:
        here = _location_parents(location)
        if memo is not None:
            memo[location] = here
    of_kind = _BY_KIND.get(kind)
    return here + of_kind(name, location, attributes, spec) if of_kind else here


def parents(entry: Entry) -> list[str]:
    """Ids of the entries this one needs to exist first (they may or may not exist): those of
    its location, then those of its kind."""
    return _parents(entry.id, entry.kind, entry.location, entry.attributes, entry.spec)


def parents_of_json(doc: Mapping[str, Any], memo: Parents | None = None) -> list[str]:
    """``parents`` of an entry as JSON (an action's ``before`` or ``after``), read straight
    from it: ordering half a million actions makes no ``Entry`` of each. ``memo``: the
    parents of each location seen so far, kept by a caller that asks about many entries
    (the list it returns may then be one the memo holds: the caller does not change it)."""
    kind, location = doc["kind"], doc.get("location")
    if memo is not None and location is not None and kind not in _BY_KIND:
        here = memo.get(location)  # a counter's, a group's: its location's parents alone
        if here is not None:
            return here
    return _parents(doc["id"], kind, location, doc.get("attributes") or {},
                    doc.get("spec") or {}, memo)
