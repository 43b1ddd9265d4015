"""The site-config's share of the policies: its ``policy:`` section and its proxies.

Both sections may be split across files; items keep their own file and YAML path. The
``proxies:`` section is validated by the site compiler, so it is read leniently here:
only what scoping needs (name, host, active and standby providers).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from compiler.core.problems import Problems, Where
from compiler.policy.model import Proxy, RoleDef, RoleRule, SitePolicy, Waiver
from compiler.policy.reader import Fields
from compiler.policy.roles import read_role, read_role_rule
from compiler.policy.waivers import read_waiver
from compiler.source.yaml_source import (
    SourceFile,
    display_path,
    find_yaml_files,
    load_bytes,
    read_file,
)

POLICY_KEYS = ("roles", "allow", "deny", "waivers")
MARKERS = (b"policy", b"proxies")
T = TypeVar("T")


def read_site(site_files: Sequence[SourceFile], problems: Problems) -> SitePolicy:
    roles: list[RoleDef] = []
    allow: list[RoleRule] = []
    deny: list[RoleRule] = []
    waivers: list[Waiver] = []
    proxies: list[Proxy] = []
    for sf in site_files:
        if not isinstance(sf.data, dict):
            continue
        if "policy" in sf.data:
            where = Where(sf.path, ("policy",))
            f = Fields.of(sf.data["policy"], where, problems, "'policy'", optional=POLICY_KEYS)
            if f is not None:
                roles += _each(f, "roles", lambda i, w: read_role(i, w, problems, from_site=True))
                allow += _each(f, "allow", lambda i, w: read_role_rule(i, w, problems))
                deny += _each(f, "deny", lambda i, w: read_role_rule(i, w, problems))
                waivers += _each(f, "waivers", lambda i, w: read_waiver(i, w, problems))
        proxies += _proxies(sf.path, sf.data)
    return SitePolicy(tuple(roles), tuple(allow), tuple(deny), tuple(waivers), tuple(proxies))


def mentions_site_policy(data: bytes) -> bool:
    """Cheap pre-filter: a file that never spells the section names has neither section."""
    return any(m in data for m in MARKERS)


def load_site_policy_files(site_dir: Path, problems: Problems) -> list[SourceFile]:
    """The site's files that may hold ``policy:`` or ``proxies:``, each read once; the rest
    (most of a big site: host lists) are never parsed."""
    out: list[SourceFile] = []
    for path in find_yaml_files(site_dir, problems):
        data = read_file(path, display_path(path), problems)
        if data is not None and mentions_site_policy(data):
            source = load_bytes(data, display_path(path), problems, path)
            if source is not None:
                out.append(source)
    return out


def _each(f: Fields, key: str, read: Callable[[Any, Where], T | None]) -> list[T]:
    return [x for item, where in f.items(key) if (x := read(item, where)) is not None]


def _names(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _proxies(file: str, data: dict[str, Any]) -> list[Proxy]:
    raw = data.get("proxies")
    if not isinstance(raw, list):
        return []
    out: list[Proxy] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        host = item.get("host")
        providers = sorted(set(_names(item.get("active")) + _names(item.get("standby"))))
        out.append(
            Proxy(
                item["name"],
                host if isinstance(host, str) else None,
                tuple(providers),
                Where(file, ("proxies", i)),
            )
        )
    return out
