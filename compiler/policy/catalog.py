"""Reading policies/opcodes.yaml: categories with id ranges, and unique, stable opcodes."""

from __future__ import annotations

import re
from typing import Any

from compiler.core.names import POLICY_NAME_RE, did_you_mean
from compiler.core.problems import Problems, Where
from compiler.policy import codes
from compiler.policy.model import Catalog, Category, Opcode, Risk
from compiler.policy.reader import Fields, read_document
from compiler.source.yaml_source import SourceFile

OPCODE_RE = re.compile(r"^[a-z][a-z0-9]*\.[a-z][a-z0-9-]*$")
RISKS = tuple(r.value for r in Risk)


def read_catalog(source: SourceFile, problems: Problems) -> Catalog:
    """The catalog; entries with problems are reported and left out."""
    doc = read_document(source, problems, required=("categories", "opcodes"))
    if doc is None:
        return Catalog({}, {})
    categories = _categories(doc, problems)
    opcodes: dict[str, Opcode] = {}
    by_id: dict[int, Opcode] = {}
    rejected: set[str] = set()
    for item, where in doc.items("opcodes"):
        op = _opcode(item, where, categories, problems)
        if op is None:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                rejected.add(item["name"])
            continue
        if op.name in opcodes:
            problems.error(
                codes.OPCODE_TWICE,
                f"opcode '{op.name}' is defined twice",
                "keep one entry",
                where.child("name"),
                also=(opcodes[op.name].where,),
            )
            continue
        if op.id in by_id:
            problems.error(
                codes.OPCODE_ID_TWICE,
                f"opcode id {op.id} of '{op.name}' is already used by '{by_id[op.id].name}'",
                "ids are unique and never reused; take the next free id of the category's range",
                where.child("id"),
                also=(by_id[op.id].where,),
            )
            rejected.add(op.name)
            continue
        opcodes[op.name] = op
        by_id[op.id] = op
    return Catalog(categories, dict(sorted(opcodes.items())), frozenset(rejected - opcodes.keys()))


def _categories(doc: Fields, problems: Problems) -> dict[str, Category]:
    raw = doc.data.get("categories")
    if not isinstance(raw, dict):
        if "categories" in doc.data:
            problems.error(codes.BAD_VALUE, "'categories' must be a mapping", "",
                           doc.at("categories"))
        return {}
    out: dict[str, Category] = {}
    for name, value in raw.items():
        category = _category(name, value, doc.at("categories").child(str(name)), out, problems)
        if category is not None:
            out[category.name] = category
    return out


def _category(name: object, value: Any, where: Where, earlier: dict[str, Category],
              problems: Problems) -> Category | None:
    """One category: a valid name, an id range that overlaps no earlier category's, a scope."""
    if not isinstance(name, str) or not POLICY_NAME_RE.match(name):
        problems.error(
            codes.BAD_NAME, f"invalid category name '{name}'", "use lowercase letters",
            where.at_key(),
        )
        return None
    f = Fields.of(
        value,
        where,
        problems,
        f"category '{name}'",
        required=("ids",),
        optional=("scope", "description"),
    )
    if f is None:
        return None
    ids = _id_range(f, problems)
    if ids is None:
        return None
    scope = f.string("scope")
    if scope is not None and scope != "provider":
        problems.error(
            codes.BAD_VALUE, f"unknown scope '{scope}'", "the only scope is 'provider'",
            f.at("scope"),
        )
    clash = next((c for c in earlier.values() if ids[0] <= c.high and c.low <= ids[1]), None)
    if clash is not None:
        problems.error(
            codes.OPCODE_ID_OUT_OF_RANGE,
            f"id range of category '{name}' overlaps '{clash.name}'",
            "give each category its own range",
            f.at("ids"),
            also=(clash.where,),
        )
        return None
    return Category(name, ids[0], ids[1], scope == "provider", where)


def _id_range(f: Fields, problems: Problems) -> tuple[int, int] | None:
    """A category's ``ids``: a range [low, high] of positive integers."""
    ids = f.data.get("ids")
    if (
        isinstance(ids, list)
        and len(ids) == 2
        and all(isinstance(i, int) and not isinstance(i, bool) for i in ids)
        and 0 < ids[0] <= ids[1]
    ):
        return ids[0], ids[1]
    if "ids" in f.data:
        problems.error(
            codes.BAD_VALUE,
            "'ids' must be a range [low, high] of positive integers",
            "for example ids: [100, 199]",
            f.at("ids"),
        )
    return None


def _opcode(
    item: Any, where: Where, categories: dict[str, Category], problems: Problems
) -> Opcode | None:
    f = Fields.of(
        item,
        where,
        problems,
        "an opcode",
        required=("name", "id", "category", "risk"),
        optional=("unused", "description"),
    )
    if f is None:
        return None
    name = f.string("name", OPCODE_RE, "opcode names are '<category>.<verb>', e.g. job.submit")
    op_id = f.integer("id")
    category = f.string("category")
    risk = f.string("risk")
    unused = f.boolean("unused")
    f.string("description")
    if category is not None and category not in categories:
        problems.error(
            codes.UNKNOWN_CATEGORY,
            f"unknown category '{category}'",
            did_you_mean(category, categories) or "categories: " + ", ".join(categories),
            f.at("category"),
        )
        category = None
    if risk is not None and risk not in RISKS:
        problems.error(
            codes.UNKNOWN_RISK,
            f"unknown risk '{risk}'",
            did_you_mean(risk, RISKS) or "risks: " + ", ".join(RISKS),
            f.at("risk"),
        )
        risk = None
    if name is None or op_id is None or category is None or risk is None:
        return None
    if name.split(".", 1)[0] != category:
        problems.error(
            codes.OPCODE_NOT_IN_CATEGORY,
            f"opcode '{name}' is not named after its category '{category}'",
            f"name it '{category}.{name.split('.', 1)[1]}' or fix its category",
            f.at("name"),
        )
        return None
    cat = categories[category]
    if not cat.low <= op_id <= cat.high:
        problems.error(
            codes.OPCODE_ID_OUT_OF_RANGE,
            f"id {op_id} of '{name}' is outside category '{category}' range {cat.low}-{cat.high}",
            "take a free id of the category's range",
            f.at("id"),
            also=(cat.where,),
        )
        return None
    return Opcode(name, op_id, category, Risk(risk), unused, where)
