"""Shared volumes, per-user directories and quotas (PR-6 refinement, N8, N12)."""

from __future__ import annotations

from collections import defaultdict

from compiler.contract.supply_map import Entry
from compiler.contract.vocabulary import PRESENT, EntryKind
from compiler.emit.context import EmitContext
from compiler.model.document import SiteDocument
from compiler.model.volumes import Volume


def mounts_by_group(doc: SiteDocument) -> dict[str, list[str]]:
    """Which volumes each host group mounts: an L1 attribute of its hosts."""
    out: dict[str, set[str]] = defaultdict(set)
    for v in doc.volumes:
        for group in v.item.mounted_by:
            out[group].add(v.item.name)
    return {g: sorted(names) for g, names in out.items()}


def emit_volumes(doc: SiteDocument, ctx: EmitContext) -> None:
    """Every quota, then each volume with a directory for each of its users."""
    volumes = {v.item.name: v.item for v in doc.volumes}
    quota_users = _emit_quotas(doc, volumes, ctx)
    for loc in doc.volumes:
        ctx.at(loc.where)
        _emit_volume(loc.item, sorted(set(loc.item.users) | quota_users[loc.item.name]), ctx)


def _emit_quotas(
    doc: SiteDocument, volumes: dict[str, Volume], ctx: EmitContext
) -> dict[str, set[str]]:
    """Each grant's quota entry (a volume's at its provider, a pool's at the controller
    map), each from the line of its grant; returns the users given a quota on each volume,
    who get a directory there."""
    users: dict[str, set[str]] = {name: set() for name in volumes}
    quotas = ((q, *q.item.target, g) for q in doc.quotas for g in q.item.grants())
    for q, kind, target, (scope, subject, limit, path) in quotas:
        ctx.at(q.where, *path)
        if kind == EntryKind.VOLUME and target in volumes:
            v = volumes[target]
            if scope == "user":
                users[target].add(subject)
            ctx.add(
                Entry(
                    f"quota/{target}/{scope}/{subject}",
                    EntryKind.QUOTA.value,
                    PRESENT.value,
                    "config",
                    v.provider,
                    f"volume/{target}",
                    limit,
                    spec={"scope": scope, "subject": subject, "path": v.path},
                    owner=ctx.owner,
                )
            )
        elif kind == "pool":
            ctx.controlled(
                f"quota/{target}/{scope}/{subject}",
                EntryKind.QUOTA,
                limit,
                location=f"pool/{target}",
                spec={"scope": scope, "subject": subject},
            )
    return users


def _emit_volume(v: Volume, users: list[str], ctx: EmitContext) -> None:
    """The volume's entry and one directory entry per user, in name order."""
    spec: dict[str, object] = {
        "path": v.path,
        "access_mode": v.access_mode,
        "mode": v.root.mode,
        "owner": v.root.owner,
        "group": v.root.group,
    }
    if v.retention is not None:
        spec.update(v.retention.spec())
    attrs: dict[str, object] = {"mounted_by": sorted(v.mounted_by)}
    used_by = v.used_by.model_dump(exclude_defaults=True)
    if used_by:
        attrs["used_by"] = {k: sorted(x) for k, x in used_by.items()}
    if v.default:
        attrs["default"] = True
    location = f"volume/{v.name}"
    ctx.add(
        Entry(location, EntryKind.VOLUME.value, PRESENT.value, "config", v.provider, None,
              v.capacity, attrs, spec, ctx.owner)
    )
    # the capacity as a pool counter the scheduler charges job output to (PR-6)
    ctx.controlled(f"counter/capacity@{location}", EntryKind.COUNTER, v.capacity,
                   location=location)
    for user in users:
        ctx.add(
            Entry(
                f"volume-dir/{v.name}/{user}",
                EntryKind.VOLUME_DIR.value,
                PRESENT.value,
                "config",
                v.provider,
                location,
                None,
                spec={"path": f"{v.path}/{user}", "mode": v.user_dirs.mode, "owner": user},
                owner=ctx.owner,
            )
        )
