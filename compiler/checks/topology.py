"""Where hosts are (R5): each topology key a host group or override uses is one of the
site's (``site.topology``), and each is given once, as a shorthand or in the map."""

from __future__ import annotations

from collections.abc import Collection

from compiler.core import codes
from compiler.core.names import did_you_mean
from compiler.core.problems import Problems, Where
from compiler.model.document import SiteDocument
from compiler.model.hosts import SHORTHANDS, HostGroup, HostOverride


def check_topology(doc: SiteDocument, problems: Problems) -> None:
    """Every group and override; the keys are checked only when the site section is valid
    (an invalid one is reported already, and its keys are not known)."""
    site = doc.site
    keys = site.item.topology if site is not None else None
    also = (
        [site.where.child("topology")]
        if site is not None and "topology" in site.item.model_fields_set
        else []
    )
    for loc in doc.host_groups:
        group = loc.item
        what = f"host group '{group.name}'"
        _check_item(group, what, loc.where, keys, also, problems)
        for expr, override in group.overrides.items():
            where = loc.where.child("overrides", expr)
            _check_item(override, f"override '{expr}' of {what}", where, keys, also, problems)


def _check_item(
    item: HostGroup | HostOverride,
    what: str,
    where: Where,
    keys: Collection[str] | None,
    also: list[Where],
    problems: Problems,
) -> None:
    for key in SHORTHANDS:
        label = getattr(item, key)
        if label is not None and key in item.topology:
            problems.error(
                codes.TOPOLOGY_GIVEN_TWICE,
                f"the {key} of {what} is given twice: '{key}: {label}' and "
                f"'topology.{key}: {item.topology[key]}'",
                f"keep one: '{key}:' is shorthand for 'topology: {{{key}: …}}'",
                where.child("topology", key).at_key(),
                also=[where.child(key).at_key()],
            )
    if keys is None:
        return
    written = [(k, where.child(k)) for k in SHORTHANDS if getattr(item, k) is not None]
    written += [(k, where.child("topology", k)) for k in item.topology]
    for key, at in written:
        if key not in keys:
            problems.error(
                codes.UNKNOWN_TOPOLOGY_KEY,
                f"topology key '{key}' of {what} is not one of the site's: "
                f"site.topology is [{', '.join(keys)}]",
                _unknown_hint(key, keys),
                at.at_key(),
                also=also,
            )


def _unknown_hint(key: str, keys: Collection[str]) -> str:
    add = f"add '{key}' to site.topology: [{', '.join([*keys, key])}]"
    near = did_you_mean(key, keys)
    return f"{near} or, for a new key, {add}" if near else add
