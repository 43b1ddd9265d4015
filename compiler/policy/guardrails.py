"""Reading policies/guardrails.yaml: rules over roles that policies and sites must keep."""

from __future__ import annotations

from typing import Any

from compiler.core.names import POLICY_NAME_RE
from compiler.core.problems import Problems, Where
from compiler.policy import codes
from compiler.policy.model import Guardrail, Guardrails, Rule, WaiverLimits
from compiler.policy.reader import Fields, Ref, read_document
from compiler.source.yaml_source import SourceFile

RULE_KEYS = tuple(r.value for r in Rule)


def read_guardrails(source: SourceFile, problems: Problems) -> Guardrails:
    doc = read_document(source, problems, required=("guardrails",), optional=("waivers",))
    if doc is None:
        return Guardrails((), WaiverLimits())
    rules: dict[str, Guardrail] = {}
    for item, where in doc.items("guardrails"):
        rail = _guardrail(item, where, problems)
        if rail is None:
            continue
        if rail.name in rules:
            problems.error(
                codes.GUARDRAIL_TWICE,
                f"guardrail '{rail.name}' is defined twice",
                "keep one",
                where.child("name"),
                also=(rules[rail.name].where,),
            )
            continue
        rules[rail.name] = rail
    return Guardrails(tuple(rules.values()), _limits(doc, problems))


def _limits(doc: Fields, problems: Problems) -> WaiverLimits:
    if not doc.has("waivers"):
        return WaiverLimits()
    f = Fields.of(
        doc.data["waivers"],
        doc.at("waivers"),
        problems,
        "'waivers'",
        optional=("max_days", "warn_days"),
    )
    if f is None:
        return WaiverLimits()
    default = WaiverLimits()
    max_days = f.integer("max_days", minimum=1)
    warn_days = f.integer("warn_days", minimum=0)
    return WaiverLimits(
        default.max_days if max_days is None else max_days,
        default.warn_days if warn_days is None else warn_days,
    )


def _guardrail(item: Any, where: Where, problems: Problems) -> Guardrail | None:
    f = Fields.of(
        item,
        where,
        problems,
        "a guardrail",
        required=("name", "opcodes"),
        optional=("description", *RULE_KEYS),
    )
    if f is None:
        return None
    name = f.string("name", POLICY_NAME_RE, "guardrail names are lowercase words joined by '-'")
    description = f.string("description") or ""
    opcodes = f.refs("opcodes")
    given = [r for r in Rule if f.has(r.value)]
    if len(given) != 1:
        problems.error(
            codes.GUARDRAIL_NOT_ONE_RULE,
            "a guardrail needs exactly one rule",
            "use one of: only_roles, never_roles, held_or_unused",
            where,
        )
        return None
    rule = given[0]
    if rule is Rule.HELD_OR_UNUSED:
        if not f.boolean(rule.value):
            problems.error(
                codes.GUARDRAIL_NOT_ONE_RULE,
                "held_or_unused can only be true",
                "or remove the guardrail",
                f.at(rule.value),
            )
            return None
        roles: tuple[Ref, ...] = ()
    else:
        roles = f.refs(rule.value)
        if not roles:
            return None
    if name is None or not opcodes:
        return None
    return Guardrail(name, description, opcodes, rule, roles, where)
