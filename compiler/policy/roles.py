"""Reading role definitions, from policies/roles.yaml and from a site's ``policy.roles``."""

from __future__ import annotations

from typing import Any

from compiler.core.names import POLICY_NAME_RE
from compiler.core.problems import Problems, Where
from compiler.policy.model import RoleDef, RoleRule
from compiler.policy.reader import Fields, read_document
from compiler.source.yaml_source import SourceFile

ROLE_NAME_HINT = "role names are lowercase letters, digits and '-', e.g. node-manager"


def read_roles(source: SourceFile, problems: Problems) -> list[RoleDef]:
    doc = read_document(source, problems, required=("roles",))
    if doc is None:
        return []
    return [
        role
        for item, where in doc.items("roles")
        if (role := read_role(item, where, problems, from_site=False)) is not None
    ]


def read_role(item: Any, where: Where, problems: Problems, *, from_site: bool) -> RoleDef | None:
    f = Fields.of(
        item,
        where,
        problems,
        "a role",
        required=("name", "allow"),
        optional=("deny", "description"),
    )
    if f is None:
        return None
    name = f.string("name", POLICY_NAME_RE, ROLE_NAME_HINT)
    allow = f.refs("allow")
    deny = f.refs("deny")
    description = f.string("description") or ""
    if name is None:
        return None
    return RoleDef(name, description, allow, deny, where, from_site)


def read_role_rule(item: Any, where: Where, problems: Problems) -> RoleRule | None:
    """A site's ``{role: NAME, opcodes: [selectors]}`` extra allow or deny."""
    f = Fields.of(item, where, problems, "a rule", required=("role", "opcodes"))
    if f is None:
        return None
    role = f.ref("role")
    opcodes = f.refs("opcodes")
    if role is None or not opcodes:
        return None
    return RoleRule(role, opcodes)
