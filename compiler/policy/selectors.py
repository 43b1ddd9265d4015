"""Opcode selectors: a name, a glob over names, ``category:<c>`` or ``risk:<r>``.

Broad selectors (globs, categories, risks) never pick an opcode marked ``unused``, so
``"*"`` means every opcode in use; naming an unused opcode in an allow rule is an error.
A selector that matches nothing is an error with a suggestion, never silently empty.
"""

from __future__ import annotations

from compiler.core.globs import glob_matcher
from compiler.core.names import did_you_mean
from compiler.core.problems import Problems
from compiler.policy import codes
from compiler.policy.catalog import RISKS
from compiler.policy.model import Catalog, Opcode
from compiler.policy.reader import Ref

GLOB_CHARS = frozenset("*?[")


def resolve(sel: Ref, catalog: Catalog, problems: Problems, *, grant: bool = False) -> list[str]:
    """The opcode names ``sel`` selects, sorted; problems are reported at the selector."""
    text = sel.text.strip()
    in_use = [op for op in catalog.opcodes.values() if not op.unused]
    if text.startswith("category:"):
        return _by_category(sel, text, in_use, catalog, problems)
    if text.startswith("risk:"):
        return _by_risk(sel, text, in_use, problems)
    if GLOB_CHARS & set(text):
        return _by_glob(sel, text, in_use, catalog, problems)
    return _by_name(sel, text, catalog, problems, grant=grant)


def _by_category(sel: Ref, text: str, in_use: list[Opcode], catalog: Catalog,
                 problems: Problems) -> list[str]:
    """``category:<c>``: the opcodes in use of that category."""
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


def _by_risk(sel: Ref, text: str, in_use: list[Opcode], problems: Problems) -> list[str]:
    """``risk:<r>``: the opcodes in use of that risk."""
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


def _by_glob(sel: Ref, text: str, in_use: list[Opcode], catalog: Catalog,
             problems: Problems) -> list[str]:
    """A glob over names: the opcodes in use it matches, at least one."""
    match = glob_matcher([text])
    names = [op.name for op in in_use if match is not None and match.match(op.name)]
    if not names:
        shapes = [*catalog.opcodes, *(f"{c}.*" for c in catalog.categories)]
        problems.error(
            codes.GLOB_MATCHES_NOTHING,
            f"selector '{text}' matches no opcode",
            did_you_mean(text, shapes) or "see policies/opcodes.yaml for the names",
            sel.where,
        )
    return names


def _by_name(sel: Ref, text: str, catalog: Catalog, problems: Problems, *,
             grant: bool) -> list[str]:
    """One opcode by name: known, and not granted while marked unused."""
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
