"""YAML read as YAML 1.2 reads it: the core schema's types, and nothing else.

ruamel.yaml's safe loader mixes YAML 1.1 into 1.2: ``1_000`` and ``0b101`` are numbers,
``2024-01-01`` a date, ``<<`` a merge key (expanded while loading, in exponential time
for nested merges), and a ``%YAML 1.1`` file is read one way by the C parser and another
by the pure one. Editors (yaml-language-server) read the core schema of YAML 1.2, and so
does the JSON schema of the language, so the compiler reads exactly that
(docs/language.md, "Files"): a plain scalar is null, a bool, an int (decimal, ``0o``,
``0x``), a float, or text; everything else is text. What the language does not read is
refused with its place before anything is built from it (``YamlRefused``): a merge key, a
``%YAML`` directive other than 1.2, and a tag outside the core schema (``!!binary``,
``!!timestamp``, ``!!set``, ``!local``).
"""

from __future__ import annotations

import math
import re
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.constructor import SafeConstructor
from ruamel.yaml.error import MarkedYAMLError
from ruamel.yaml.nodes import Node, ScalarNode
from ruamel.yaml.resolver import VersionedResolver
from ruamel.yaml.tag import Tag
from ruamel.yaml.tokens import DirectiveToken

from compiler.core import codes

CORE = "tag:yaml.org,2002:"
MERGE = CORE + "merge"
# The core schema's tag resolution (YAML 1.2.2, 10.3.2), in its order.
_IMPLICIT: tuple[tuple[str, re.Pattern[str]], ...] = (
    (CORE + "null", re.compile(r"null|Null|NULL|~|")),
    (CORE + "bool", re.compile(r"true|True|TRUE|false|False|FALSE")),
    (CORE + "int", re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")),
    (CORE + "float", re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                                r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")),
)
_PATTERNS = dict(_IMPLICIT)
_MAX_DIGITS = 4300  # what Python's int() reads from text (sys.get_int_max_str_digits)
_DIRECTIVE_LINE = re.compile(r"(?:^|[\n\r])%")
PLAIN_TYPES = "text, numbers, true/false, null, lists and mappings"


class YamlRefused(MarkedYAMLError):
    """YAML that parses but that the language does not read, at ``problem_mark``."""

    def __init__(self, code: str, message: str, hint: str, mark: Any) -> None:
        super().__init__(problem=message, problem_mark=mark)
        self.code = code
        self.message = message
        self.hint = hint


def _tag_name(tag: Any) -> str:
    text = str(tag)
    return "!!" + text[len(CORE):] if text.startswith(CORE) else text


class CoreResolver(VersionedResolver):
    """A plain scalar's tag by the core schema alone, whatever the YAML version; a plain
    ``<<`` is named a merge key only so that the constructor can refuse it by name."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is ScalarNode and implicit[0]:
            for tag, pattern in _IMPLICIT:
                if pattern.fullmatch(value):
                    return Tag(suffix=tag)
            if value == "<<":
                return Tag(suffix=MERGE)
        return super().resolve(kind, value, (False, False))


class CoreConstructor(SafeConstructor):
    """The core schema's types; any other tag, and a merge key, is ``YamlRefused``."""

    yaml_constructors: dict[Any, Any] = {}  # noqa: RUF012 - ruamel's registry, none of Safe's

    def flatten_mapping(self, node: Any) -> Any:
        """Called before a mapping is built: where ruamel would expand merge keys."""
        for key_node, _ in node.value:
            if str(key_node.tag) == MERGE:
                raise YamlRefused(
                    codes.NOT_PLAIN_YAML,
                    "'<<' is a YAML 1.1 merge key, which YAML 1.2 does not have",
                    "write the keys out; to repeat a whole value, name it with an anchor "
                    "(&name) and repeat it with an alias (*name); quote '<<' to mean the text",
                    key_node.start_mark,
                )
        return None

    def construct_core_null(self, node: ScalarNode) -> None:
        _scalar(node, "null")

    def construct_core_bool(self, node: ScalarNode) -> bool:
        return _scalar(node, "bool").lower() == "true"

    def construct_core_int(self, node: ScalarNode) -> int:
        text = _scalar(node, "int")
        if text.startswith(("0o", "0x")):
            return int(text[2:], 8 if text[1] == "o" else 16)
        if len(text) > _MAX_DIGITS:
            raise YamlRefused(
                codes.NOT_YAML, f"a number of {len(text):,} digits, far past the largest "
                "that a value can hold", "write the number it should be", node.start_mark)
        return int(text)

    def construct_core_float(self, node: ScalarNode) -> float:
        text = _scalar(node, "float").lower()
        if text.endswith(".inf"):
            return -math.inf if text.startswith("-") else math.inf
        return math.nan if text == ".nan" else float(text)

    def construct_core_str(self, node: ScalarNode) -> str:
        return str(self.construct_scalar(node))

    def construct_other(self, node: Node) -> None:
        raise YamlRefused(
            codes.NOT_PLAIN_YAML,
            f"the tag {_tag_name(node.tag)} is not part of the language",
            f"remove the tag: values are YAML 1.2's plain types ({PLAIN_TYPES}); quote a "
            "value to make it text",
            node.start_mark,
        )


def _scalar(node: Any, kind: str) -> str:
    """A scalar tagged ``!!kind`` (implicitly or explicitly) written as the core schema
    writes that kind; an explicit ``!!int 1_000`` is refused as it would be untagged."""
    if not isinstance(node, ScalarNode) or not _PATTERNS[CORE + kind].fullmatch(node.value):
        raise YamlRefused(
            codes.NOT_PLAIN_YAML,
            f"this value is not {kind} as YAML 1.2 writes it (tag !!{kind})",
            f"remove the tag, or write the value as YAML 1.2's core schema does; values are "
            f"{PLAIN_TYPES}",
            node.start_mark,
        )
    return str(node.value)


_CORE_METHODS = {"null": "construct_core_null", "bool": "construct_core_bool",
                 "int": "construct_core_int", "float": "construct_core_float",
                 "str": "construct_core_str", "seq": "construct_yaml_seq",
                 "map": "construct_yaml_map"}
for _kind, _method in _CORE_METHODS.items():
    CoreConstructor.add_constructor(CORE + _kind, getattr(CoreConstructor, _method))
CoreConstructor.add_constructor(None, CoreConstructor.construct_other)


def reader(pure: bool = False) -> YAML:
    """A safe loader of the core schema that refuses duplicate keys: on libyaml's C parser
    (fast), or on ruamel's pure one (``pure``)."""
    y = YAML(typ="safe", pure=pure)
    y.Resolver = CoreResolver
    y.Constructor = CoreConstructor
    y.allow_duplicate_keys = False
    return y


def check_directives(text: str) -> None:
    """Refuse a ``%YAML`` directive other than 1.2 (``YamlRefused``), before any parser
    sees it: libyaml reads ``%YAML 1.1`` as 1.2, ruamel's own parser reads it as 1.1 and
    fails on ``1.0`` or ``1.3``. A directive starts a line with ``%``; only such a text is
    scanned (by the pure scanner, which knows a directive from a block scalar's line)."""
    if _DIRECTIVE_LINE.search(text) is None:
        return
    for token in YAML(typ="safe", pure=True).scan(text):
        if isinstance(token, DirectiveToken) and token.name == "YAML" \
                and tuple(token.value) != (1, 2):
            major, minor = token.value
            raise YamlRefused(
                codes.NOT_PLAIN_YAML,
                f"the file declares YAML {major}.{minor} (%YAML {major}.{minor}); site-config "
                "is read as YAML 1.2",
                "remove the %YAML line (or write %YAML 1.2); in YAML 1.2, yes/no/on/off are "
                "text and 0700 is the number 700",
                token.start_mark,
            )

