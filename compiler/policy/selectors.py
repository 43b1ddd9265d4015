"""Opcode selectors: a name, a glob over names, ``category:<c>`` or ``risk:<r>``.

Broad selectors (globs, categories, risks) never pick an opcode marked ``unused``, so
``"*"`` means every opcode in use; naming an unused opcode in an allow rule is an error.
A selector that matches nothing is an error with a suggestion, never silently empty.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from compiler.core.names import did_you_mean
from compiler.core.problems import Problems
from compiler.policy import codes
from compiler.policy.catalog import RISKS
from compiler.policy.model import Catalog
from compiler.policy.reader import Ref

GLOB_CHARS = frozenset("*?[")


def resolve(sel: Ref, catalog: Catalog, problems: Problems, *, grant: bool = False) -> list[str]:
    """The opcode names ``sel`` selects, sorted; problems are reported at the selector."""
    text = sel.text.strip()
    in_use = [op for op in catalog.opcodes.values() if not op.unused]
    if text.startswith("category:"):
        cat = text.removeprefix("category:")
        if cat not in catalog.categories:
            problems.error(
                codes.SELECTOR_UNKNOWN_CLASS,
                f"unknown category '{cat}' in selector '{text}'",
                did_you_mean(cat, catalog.categories)
                or "categories: " + ", ".join(catalog.categories),
                sel.where,
            )
            return []
        return [op.name for op in in_use if op.category == cat]
    if text.startswith("risk:"):
        risk = text.removeprefix("risk:")
        if risk not in RISKS:
            problems.error(
                codes.SELECTOR_UNKNOWN_CLASS,
                f"unknown risk '{risk}' in selector '{text}'",
                did_you_mean(risk, RISKS) or "risks: " + ", ".join(RISKS),
                sel.where,
            )
            return []
        return [op.name for op in in_use if op.risk == risk]
    if GLOB_CHARS & set(text):
        names = [op.name for op in in_use if fnmatchcase(op.name, text)]
        if not names:
            shapes = [*catalog.opcodes, *(f"{c}.*" for c in catalog.categories)]
            problems.error(
                codes.GLOB_MATCHES_NOTHING,
                f"selector '{text}' matches no opcode",
                did_you_mean(text, shapes) or "see policies/opcodes.yaml for the names",
                sel.where,
            )
        return names
    op = catalog.opcodes.get(text)
    if op is None and text in catalog.rejected:
        return []  # its catalog entry is wrong and already reported
    if op is None:
        problems.error(
            codes.UNKNOWN_OPCODE,
            f"unknown opcode '{text}'",
            did_you_mean(text, catalog.opcodes) or "see policies/opcodes.yaml",
            sel.where,
        )
        return []
    if grant and op.unused:
        problems.error(
            codes.UNUSED_OPCODE_GRANTED,
            f"opcode '{text}' is marked unused but granted here",
            "remove the grant, or remove 'unused: true' from the catalog",
            sel.where,
            also=(op.where,),
        )
        return []
    return [text]


def resolve_all(
    sels: tuple[Ref, ...], catalog: Catalog, problems: Problems, *, grant: bool = False
) -> set[str]:
    out: set[str] = set()
    for sel in sels:
        out.update(resolve(sel, catalog, problems, grant=grant))
    return out
