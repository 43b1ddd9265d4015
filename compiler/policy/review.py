"""What each role and proxy gains and loses between two compiled allowlists documents.

Works on the documents only (the same data the snapshot tests pin), so a review compares
exactly what the controller would load. Escalations are the changes that widen access:
a role gaining a spend or admin opcode, a new role, a removed deny, a new or widened
waiver, and catalog changes that re-point existing grants (a changed or reused id, a
lowered risk). CI maps them to exit 3 and asks for a second approval.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from compiler.policy.model import ESCALATING_RISKS, Risk

RISK_ORDER = {r.value: i for i, r in enumerate(Risk)}

EXIT_NONE, EXIT_CHANGES, EXIT_ESCALATION = 0, 2, 3


class Section(StrEnum):
    ROLE = "role"
    PROXY = "proxy"
    WAIVER = "waiver"
    OPCODE = "opcode"


@dataclass(frozen=True, slots=True)
class Delta:
    """One line of the review: ``what`` happened to ``items`` of a role, proxy, waiver or
    opcode (no items: the change is about the subject itself, e.g. a new role)."""

    section: Section
    subject: str
    what: str  # gained | lost | deny-removed | deny-added | added | removed | changed | ...
    items: tuple[str, ...]  # the opcodes concerned
    detail: str  # reads on its own: a change without items says what happened to its subject
    escalation: str | None = None
    providers: tuple[str, ...] = ()  # for a proxy: the providers the opcodes are scoped to

    def to_json(self) -> dict[str, Any]:
        return {
            "section": self.section.value,
            "subject": self.subject,
            "what": self.what,
            "items": list(self.items),
            "providers": list(self.providers),
            "detail": self.detail,
            "escalation": self.escalation,
        }


@dataclass(frozen=True, slots=True)
class Review:
    base: str
    head: str
    changes: tuple[Delta, ...]

    @property
    def escalations(self) -> list[Delta]:
        return [c for c in self.changes if c.escalation]

    @property
    def exit_code(self) -> int:
        if self.escalations:
            return EXIT_ESCALATION
        return EXIT_CHANGES if self.changes else EXIT_NONE

    @property
    def status(self) -> str:
        return {EXIT_NONE: "none", EXIT_CHANGES: "changes"}.get(self.exit_code, "escalation")


class _Catalog:
    """Opcode facts of one side, by name."""

    def __init__(self, doc: Mapping[str, Any]) -> None:
        self.ops: dict[str, dict[str, Any]] = {o["name"]: o for o in doc.get("catalog", [])}

    def label(self, name: str) -> str:
        return f"{name} {self.facts(name)}" if name in self.ops else name

    def facts(self, name: str) -> str:
        op = self.ops[name]
        return f"({op['id']}, {op['risk']})"

    def in_use(self, name: str) -> bool:
        """Grantable: in the catalog and not marked unused (a deny of it denies nothing)."""
        op = self.ops.get(name)
        return op is not None and not op.get("unused", False)

    def escalating(self, name: str) -> str | None:
        op = self.ops.get(name)
        if op is not None and op["risk"] in ESCALATING_RISKS:
            article = "an" if op["risk"][0] in "aeiou" else "a"
            return f"gains {article} {op['risk']} opcode"
        return None


def diff(base: Mapping[str, Any], head: Mapping[str, Any], base_rev: str, head_rev: str) -> Review:
    old, new = _Catalog(base), _Catalog(head)
    changes = [
        *_catalog(old, new),
        *_roles(base.get("roles", {}), head.get("roles", {}), old, new),
        *_proxies(base.get("proxies", {}), head.get("proxies", {}), new),
        *_waivers(base.get("waivers", []), head.get("waivers", [])),
    ]
    return Review(base_rev, head_rev, tuple(changes))


def _catalog(old: _Catalog, new: _Catalog) -> Iterable[Delta]:
    old_ids = {o["id"]: name for name, o in old.ops.items()}
    for name in sorted(old.ops.keys() | new.ops.keys()):
        a, b = old.ops.get(name), new.ops.get(name)
        if a is None and b is not None:
            was = old_ids.get(b["id"])
            yield Delta(
                Section.OPCODE,
                name,
                "added",
                (),
                f"added {new.facts(name)}",
                f"reuses id {b['id']} of removed opcode {was}" if was else None,
            )
        elif b is None and a is not None:
            yield Delta(Section.OPCODE, name, "removed", (), f"removed {old.facts(name)}")
        elif a is not None and b is not None:
            if a["id"] != b["id"]:
                yield Delta(
                    Section.OPCODE,
                    name,
                    "renumbered",
                    (),
                    f"renumbered: id {a['id']} -> {b['id']}",
                    "ids are stable: a new id re-points every existing grant",
                )
            if a["risk"] != b["risk"]:
                lowered = RISK_ORDER[b["risk"]] < RISK_ORDER[a["risk"]]
                yield Delta(
                    Section.OPCODE,
                    name,
                    "risk",
                    (),
                    f"risk {a['risk']} -> {b['risk']}",
                    "risk lowered: guardrails on it may no longer apply" if lowered else None,
                )
            if a["category"] != b["category"]:
                yield Delta(
                    Section.OPCODE,
                    name,
                    "category",
                    (),
                    f"category {a['category']} -> {b['category']}",
                )


def _roles(
    base: Mapping[str, Any], head: Mapping[str, Any], old: _Catalog, new: _Catalog
) -> Iterable[Delta]:
    for role in sorted(base.keys() | head.keys()):
        a, b = base.get(role), head.get(role)
        if a is None:
            yield Delta(Section.ROLE, role, "added", (), "new role", "new role")
        elif b is None:
            yield Delta(Section.ROLE, role, "removed", (), "role removed")
        yield from _role_grants(role, a, b, old, new)
        if a is not None and b is not None:
            yield from _role_denies(role, a, b, old, new)


def _role_grants(role: str, a: Mapping[str, Any] | None, b: Mapping[str, Any] | None,
                 old: _Catalog, new: _Catalog) -> Iterable[Delta]:
    """The opcodes a role gained and lost (a new role gains all, a removed one loses all)."""
    had = {o["name"] for o in a["opcodes"]} if a else set()
    has = {o["name"] for o in b["opcodes"]} if b else set()
    for op in sorted(has - had):
        yield Delta(Section.ROLE, role, "gained", (op,), new.label(op), new.escalating(op))
    for op in sorted(had - has):
        yield Delta(Section.ROLE, role, "lost", (op,), old.label(op))


def _role_denies(role: str, a: Mapping[str, Any], b: Mapping[str, Any],
                 old: _Catalog, new: _Catalog) -> Iterable[Delta]:
    """The denies a kept role lost (an escalation, for an opcode in use) and gained."""
    was_denied, is_denied = set(a["denied"]), set(b["denied"])
    for op in sorted(o for o in was_denied - is_denied if new.in_use(o)):
        yield Delta(Section.ROLE, role, "deny-removed", (op,), new.label(op), "deny removed")
    for op in sorted((is_denied - was_denied) & old.ops.keys()):
        yield Delta(Section.ROLE, role, "deny-added", (op,), new.label(op))


def _proxy_grants(entry: Mapping[str, Any] | None) -> set[tuple[str, str]]:
    """(opcode, provider) pairs; "" stands for an opcode not scoped to providers."""
    if entry is None:
        return set()
    return {(o["name"], p) for o in entry["opcodes"] for p in o.get("providers", [""])}


def _grouped(pairs: Iterable[tuple[str, str]]) -> list[tuple[tuple[str, ...], list[str]]]:
    """Opcodes that changed for the same providers, together: one line per provider set."""
    by_op: dict[str, list[str]] = {}
    for op, provider in sorted(pairs):
        by_op.setdefault(op, []).extend([provider] if provider else [])
    groups: dict[tuple[str, ...], list[str]] = {}
    for op, providers in by_op.items():
        groups.setdefault(tuple(providers), []).append(op)
    return sorted(groups.items())


def _proxies(base: Mapping[str, Any], head: Mapping[str, Any], new: _Catalog) -> Iterable[Delta]:
    for proxy in sorted(base.keys() | head.keys()):
        a, b = base.get(proxy), head.get(proxy)
        if a is None:
            yield Delta(Section.PROXY, proxy, "added", (), "new proxy instance")
        elif b is None:
            yield Delta(Section.PROXY, proxy, "removed", (), "proxy instance removed")
        had, has = _proxy_grants(a), _proxy_grants(b)
        for what, pairs in (("gained", has - had), ("lost", had - has)):
            for providers, ops in _grouped(pairs):
                detail = ", ".join(ops) + (f" for {', '.join(providers)}" if providers else "")
                risky = [op for op in ops if what == "gained" and new.escalating(op)]
                escalation = f"gains {', '.join(map(new.label, risky))}" if risky else None
                yield Delta(Section.PROXY, proxy, what, tuple(ops), detail, escalation, providers)


def _waiver_text(what: str, w: Mapping[str, Any]) -> str:
    return (
        f"{what}: {w['role']} may break {w['guardrail']} with {', '.join(w['opcodes'])} "
        f"until {w['expires']}; reason: {w['reason']}"
    )


def _waivers(base: list[dict[str, Any]], head: list[dict[str, Any]]) -> Iterable[Delta]:
    old = {w["name"]: w for w in base}
    new = {w["name"]: w for w in head}
    for name in sorted(old.keys() | new.keys()):
        a, b = old.get(name), new.get(name)
        if a is None and b is not None:
            yield Delta(Section.WAIVER, name, "added", (), _waiver_text("added", b), "new waiver")
        elif b is None and a is not None:
            yield Delta(Section.WAIVER, name, "removed", (), _waiver_text("removed", a))
        elif a is not None and b is not None and a != b:
            widened = (
                b["expires"] > a["expires"]
                or not set(b["opcodes"]) <= set(a["opcodes"])
                or (a["role"], a["guardrail"]) != (b["role"], b["guardrail"])
            )
            yield Delta(
                Section.WAIVER,
                name,
                "changed",
                (),
                _waiver_text("changed", b),
                "waiver widened" if widened else None,
            )
