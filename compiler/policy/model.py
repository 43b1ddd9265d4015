"""Plain data between the policy stages: catalog, roles, guardrails, waivers, proxies.

Every item keeps the ``Where`` it was written at, so later checks (guardrails, unknown
names) report on the line that caused them, in a policy file or in the site-config.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from compiler.core.problems import Where
from compiler.policy.reader import Ref

PROXY_ROLE = "proxy"  # the role every proxy instance of the site-config runs as


class Risk(StrEnum):
    READ = "read"
    WRITE = "write"
    SPEND = "spend"
    ADMIN = "admin"


ESCALATING_RISKS = frozenset({Risk.SPEND, Risk.ADMIN})


@dataclass(frozen=True, slots=True)
class Category:
    name: str
    low: int
    high: int
    provider_scoped: bool  # limited to a proxy's providers in its scoped allowlist
    where: Where


@dataclass(frozen=True, slots=True)
class Opcode:
    name: str
    id: int
    category: str
    risk: Risk
    unused: bool
    where: Where


@dataclass(frozen=True, slots=True)
class Catalog:
    categories: Mapping[str, Category]
    opcodes: Mapping[str, Opcode]  # by name
    rejected: frozenset[str] = frozenset()  # names of entries with problems (already reported)


@dataclass(frozen=True, slots=True)
class RoleDef:
    """A role as written: in policies/roles.yaml or as a site's extra role."""

    name: str
    description: str
    allow: tuple[Ref, ...]
    deny: tuple[Ref, ...]
    where: Where
    from_site: bool


@dataclass(frozen=True, slots=True)
class RoleRule:
    """A site's extra allow or deny for a role defined elsewhere."""

    role: Ref
    opcodes: tuple[Ref, ...]


class Rule(StrEnum):
    ONLY_ROLES = "only_roles"
    NEVER_ROLES = "never_roles"
    HELD_OR_UNUSED = "held_or_unused"


@dataclass(frozen=True, slots=True)
class Guardrail:
    name: str
    description: str
    opcodes: tuple[Ref, ...]
    rule: Rule
    roles: tuple[Ref, ...]  # empty for held_or_unused
    where: Where


@dataclass(frozen=True, slots=True)
class WaiverLimits:
    max_days: int = 366
    warn_days: int = 30


@dataclass(frozen=True, slots=True)
class Guardrails:
    rules: tuple[Guardrail, ...]
    limits: WaiverLimits


@dataclass(frozen=True, slots=True)
class Waiver:
    name: str
    guardrail: Ref
    role: Ref
    opcodes: tuple[Ref, ...]
    reason: str
    expires: datetime.date
    expires_where: Where
    where: Where


@dataclass(frozen=True, slots=True)
class Proxy:
    name: str
    host: str | None
    providers: tuple[str, ...]  # active and standby, sorted
    where: Where


@dataclass(frozen=True, slots=True)
class SitePolicy:
    roles: tuple[RoleDef, ...] = ()
    allow: tuple[RoleRule, ...] = ()
    deny: tuple[RoleRule, ...] = ()
    waivers: tuple[Waiver, ...] = ()
    proxies: tuple[Proxy, ...] = ()
