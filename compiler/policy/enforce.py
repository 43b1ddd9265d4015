"""Guardrail enforcement: every violation is an error at the selector that granted it,
unless a valid waiver names that guardrail, role and opcode."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from compiler.core.problems import Problems
from compiler.policy import codes
from compiler.policy.model import Catalog, Guardrail, Rule, Waiver
from compiler.policy.resolve import ResolvedRole, known_role
from compiler.policy.selectors import resolve_all

WaiverKey = tuple[str, str, str]  # guardrail, role, opcode


def waiver_index(
    waivers: Sequence[Waiver],
    roles: Mapping[str, ResolvedRole],
    catalog: Catalog,
    problems: Problems,
) -> dict[WaiverKey, Waiver]:
    index: dict[WaiverKey, Waiver] = {}
    for w in waivers:
        if not known_role(w.role, roles, problems):
            continue
        for op in sorted(resolve_all(w.opcodes, catalog, problems)):
            index.setdefault((w.guardrail.text, w.role.text, op), w)
    return index


def enforce(
    rails: Sequence[Guardrail],
    roles: Mapping[str, ResolvedRole],
    catalog: Catalog,
    waivers: Mapping[WaiverKey, Waiver],
    problems: Problems,
) -> dict[WaiverKey, Waiver]:
    """Report every violation; return the waivers in use, keyed by each grant they let
    through (so a waiver written with a broad selector lists only what it really waives)."""
    used: dict[WaiverKey, Waiver] = {}
    for rail in rails:
        selected = resolve_all(rail.opcodes, catalog, problems)
        named = {r.text for r in rail.roles if known_role(r, roles, problems)}
        if rail.rule is Rule.HELD_OR_UNUSED:
            _held_or_unused(rail, selected, roles, catalog, problems)
            continue
        bound = [r for r in roles.values() if (r.name in named) == (rail.rule is Rule.NEVER_ROLES)]
        for role in bound:
            for op in sorted(selected.intersection(role.granted)):
                key = (rail.name, role.name, op)
                if key in waivers:
                    used[key] = waivers[key]
                    continue
                problems.error(
                    codes.GUARDRAIL_VIOLATED,
                    _violation(rail, role.name, op, catalog, sorted(named)),
                    f"{rail.description + '. ' if rail.description else ''}Remove or deny the "
                    "grant, or add a waiver with a reason and an expiry to the site-config",
                    role.granted[op],
                    subject=role.name,
                    also=(rail.where,),
                )
    in_use = {w.name for w in used.values()}
    for w in {w.name: w for w in waivers.values()}.values():
        if w.name not in in_use:
            problems.warning(
                codes.WAIVER_STALE,
                f"waiver '{w.name}' waives nothing: role '{w.role.text}' "
                f"breaks guardrail '{w.guardrail.text}' with none of its opcodes",
                "remove the waiver",
                w.where,
            )
    return used


def _violation(rail: Guardrail, role: str, op: str, catalog: Catalog, named: list[str]) -> str:
    risk = catalog.opcodes[op].risk.value
    if rail.rule is Rule.ONLY_ROLES:
        return (
            f"role '{role}' holds {op} ({risk}), which guardrail '{rail.name}' allows only "
            f"to {', '.join(named)}"
        )
    return f"role '{role}' holds {op} ({risk}), which guardrail '{rail.name}' forbids it"


def _held_or_unused(
    rail: Guardrail,
    selected: set[str],
    roles: Mapping[str, ResolvedRole],
    catalog: Catalog,
    problems: Problems,
) -> None:
    held: set[str] = set()
    for role in roles.values():
        held.update(role.granted)
    for op in sorted(selected - held):
        opcode = catalog.opcodes[op]
        if not opcode.unused:
            problems.error(
                codes.OPCODE_NOT_HELD,
                f"no role holds opcode '{op}'",
                "grant it to the role that calls it, or mark it 'unused: true'",
                opcode.where,
                also=(rail.where,),
            )
