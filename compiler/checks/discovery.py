"""``site.discovery`` as a mapping, against the rest of the site: its group exists, its name
patterns are hostlists or globs, and no key is given that the policy would never use."""

from __future__ import annotations

from compiler.checks.index import Index
from compiler.core import codes
from compiler.core.name_patterns import pattern_problem
from compiler.core.names import did_you_mean, visible
from compiler.core.problems import Problems, Where
from compiler.model.discovery import Discovery
from compiler.model.document import SiteDocument


def check_discovery(doc: SiteDocument, index: Index, problems: Problems) -> None:
    if doc.site is None or not isinstance(doc.site.item.discovery, Discovery):
        return
    d = doc.site.item.discovery
    where = doc.site.where.child("discovery")
    if d.group is not None and d.group not in index.groups:
        shown = visible(d.group)
        problems.error(
            codes.DISCOVERY_UNKNOWN_GROUP,
            f"site.discovery.group: unknown host group '{shown}'",
            did_you_mean(d.group, index.groups.known())
            or f"define host group '{shown}' (it may list no hosts) or fix the name",
            where.child("group"),
        )
    for i, pattern in enumerate(d.names):
        why = pattern_problem(pattern)
        if why is not None:
            problems.error(
                codes.DISCOVERY_BAD_NAME,
                f"discovery name pattern '{visible(pattern)}': {why}",
                "write a hostlist such as cn[0001-0100] or a glob such as burst*",
                where.child("names", i),
            )
    _unused_keys(d, where, problems)


def _unused_keys(d: Discovery, where: Where, problems: Problems) -> None:
    """Keys that would change nothing are mistakes: say so rather than ignore them."""
    if d.policy != "admit":
        for key in ("group", "counters"):
            if getattr(d, key) is not None:
                problems.error(
                    codes.DISCOVERY_NOT_ADMIT,
                    f"site.discovery.{key} is for admitted hosts, but the policy is "
                    f"'{d.policy}', which admits none",
                    f"write 'policy: admit', or remove '{key}'",
                    where.child(key).at_key(),
                )
    if d.otherwise is not None and not d.names:
        problems.error(
            codes.DISCOVERY_OTHERWISE_ALONE,
            "site.discovery.otherwise is for the hosts the names do not match, but there "
            "are no names: every discovered host gets the policy",
            "add 'names:' (hostlists or globs), or remove 'otherwise'",
            where.child("otherwise").at_key(),
        )
