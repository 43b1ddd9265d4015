"""Each role's effective allowlist: its allow selectors minus its deny selectors (deny wins).

A site adds roles, and extra allows and denies for existing roles. Every granted opcode
remembers the selector that granted it, so a guardrail violation points at that line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from compiler.core.names import did_you_mean
from compiler.core.problems import Problems, Where
from compiler.policy import codes
from compiler.policy.model import Catalog, RoleDef, RoleRule, SitePolicy
from compiler.policy.reader import Ref
from compiler.policy.selectors import resolve, resolve_all


@dataclass(frozen=True, slots=True)
class ResolvedRole:
    name: str
    from_site: bool
    granted: Mapping[str, Where]  # opcode name -> the selector that granted it
    denied: frozenset[str]  # every opcode a deny selector names (held or not)
    where: Where


def known_role(ref: Ref, roles: Mapping[str, object], problems: Problems) -> bool:
    """True if ``ref`` names a role; otherwise report it with a suggestion."""
    if ref.text in roles:
        return True
    problems.error(
        codes.UNKNOWN_ROLE,
        f"unknown role '{ref.text}'",
        did_you_mean(ref.text, roles) or "roles: " + ", ".join(sorted(roles)),
        ref.where,
    )
    return False


def resolve_roles(
    catalog: Catalog, base: Sequence[RoleDef], site: SitePolicy, problems: Problems
) -> dict[str, ResolvedRole]:
    defs: dict[str, RoleDef] = {}
    for role in (*base, *site.roles):
        first = defs.get(role.name)
        if first is not None:
            hint = (
                "to change a role of policies/, use policy.allow or policy.deny"
                if role.from_site and not first.from_site
                else "keep one definition"
            )
            problems.error(
                codes.ROLE_TWICE,
                f"role '{role.name}' is defined twice",
                hint,
                role.where.child("name"),
                also=(first.where,),
            )
            continue
        defs[role.name] = role
    extra_allow = _by_role(site.allow, defs, problems)
    extra_deny = _by_role(site.deny, defs, problems)
    out: dict[str, ResolvedRole] = {}
    for name in sorted(defs):
        role = defs[name]
        granted: dict[str, Where] = {}
        for sel in (*role.allow, *extra_allow.get(name, ())):
            for op in resolve(sel, catalog, problems, grant=True):
                granted.setdefault(op, sel.where)
        denied = resolve_all((*role.deny, *extra_deny.get(name, ())), catalog, problems)
        kept = {op: w for op, w in sorted(granted.items()) if op not in denied}
        out[name] = ResolvedRole(name, role.from_site, kept, frozenset(denied), role.where)
    return out


def _by_role(
    rules: Sequence[RoleRule], defs: Mapping[str, RoleDef], problems: Problems
) -> dict[str, list[Ref]]:
    out: dict[str, list[Ref]] = {}
    for rule in rules:
        if known_role(rule.role, defs, problems):
            out.setdefault(rule.role.text, []).extend(rule.opcodes)
    return out
