"""The parents of an entry: the entries it needs to exist first.

A parent (volume, host group, host, dataset) is created before what lives in or on it and
removed after it. The planner orders actions by this, and a view of the plan shows what a
removal takes with it; both read it here, with the plan's data, so no view imports the planner.
"""

from __future__ import annotations

from collections.abc import Callable

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


def _of_host(entry: Entry, name: str, location: str | None) -> list[str]:
    return [*_in_group(entry.attributes.get("group")), f"instance/{name}"]


def _of_instance(entry: Entry, name: str, location: str | None) -> list[str]:
    return _in_group(entry.spec.get("group"))


def _of_volume_dir(entry: Entry, name: str, location: str | None) -> list[str]:
    return ["volume/" + name.partition("/")[0]]


def _of_job_dir(entry: Entry, name: str, location: str | None) -> list[str]:
    """job-dir/<volume>/<user>/<job>: evicted before its user dir goes."""
    return ["volume-dir/" + name.rpartition("/")[0]]


def _of_quota(entry: Entry, name: str, location: str | None) -> list[str]:
    target, scope, subject = [*name.split("/", 2), "", ""][:3]
    out = []
    if location is None:
        out.append(f"volume/{target}")
    if scope == "user" and (location is None or location.startswith("volume/")):
        out.append(f"volume-dir/{target}/{subject}")
    return out


def _of_dataset_copy(entry: Entry, name: str, location: str | None) -> list[str]:
    dataset = entry.spec.get("dataset") or "@".join(name.split("@")[:2])
    return [f"dataset/{dataset}"]


_BY_KIND: dict[str, Callable[[Entry, str, str | None], list[str]]] = {
    EntryKind.HOST: _of_host,
    EntryKind.INSTANCE: _of_instance,
    EntryKind.VOLUME_DIR: _of_volume_dir,
    EntryKind.JOB_DIR: _of_job_dir,
    EntryKind.QUOTA: _of_quota,
    EntryKind.DATASET_COPY: _of_dataset_copy,
}


def parents(entry: Entry) -> list[str]:
    """Ids of the entries this one needs to exist first (they may or may not exist): those of
    its location, then those of its kind."""
    name = entry.id.partition("/")[2]
    location = entry.location
    if location is None and "@" in name and entry.kind == EntryKind.COUNTER:
        location = name.partition("@")[2]
    of_kind = _BY_KIND.get(entry.kind)
    return _location_parents(location) + (of_kind(entry, name, location) if of_kind else [])
