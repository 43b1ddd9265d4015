"""The editor schema in docs/ is the one the compiler prints, and it accepts the example site.

Editors read ``docs/site-config.schema.json`` (see docs/editors.md); if the language changes
and the file is not regenerated, editors would flag valid files or miss typos.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from compiler.cmds.compile import main
from compiler.source.yaml12 import reader
from tests.conftest import EXAMPLE_SITE

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "docs" / "site-config.schema.json"
EXAMPLE_FILES = sorted(EXAMPLE_SITE.rglob("*.yaml"))
REGENERATE = ".venv/bin/xce-compile --schema > docs/site-config.schema.json"


def _schema() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return doc


def _validator() -> jsonschema.protocols.Validator:
    schema = _schema()
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _load(text: str) -> Any:
    """As the compiler and an editor read a file: YAML 1.2's core schema."""
    return reader().load(text)


def test_committed_schema_is_what_the_compiler_prints(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--schema"]) == 0
    printed = capsys.readouterr().out
    assert SCHEMA_FILE.read_text(encoding="utf-8") == printed, f"stale; run: {REGENERATE}"


# Keywords the YAML language server (VS Code and most editors) understands: draft-07's, and
# its "errorMessage" (the message shown when a value fails that schema).
DRAFT7_KEYWORDS = {
    "$schema", "$ref", "$defs", "title", "description", "default", "examples", "type",
    "properties", "additionalProperties", "patternProperties", "propertyNames", "required",
    "items", "anyOf", "allOf", "not", "if", "then", "enum", "const", "pattern", "minimum",
    "maximum", "minLength", "maxLength", "minItems", "maxItems", "minProperties",
    "errorMessage",
}  # fmt: skip


def _keywords(node: Any, out: set[str]) -> set[str]:
    """Schema keywords used anywhere (not the names under properties / $defs)."""
    if isinstance(node, dict):
        for key, value in node.items():
            out.add(key)
            if key in ("properties", "$defs", "patternProperties"):
                for sub in value.values():
                    _keywords(sub, out)
            elif key not in ("default", "const", "enum", "examples"):  # values, not schemas
                _keywords(value, out)
    elif isinstance(node, list):
        for item in node:
            _keywords(item, out)
    return out


def test_schema_uses_only_keywords_editors_understand() -> None:
    """Editors lag behind JSON Schema drafts; a newer keyword would be silently ignored."""
    _validator()  # valid under the dialect it declares
    assert _keywords(_schema(), set()) <= DRAFT7_KEYWORDS


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_file_validates(path: Path) -> None:
    errors = [e.message for e in _validator().iter_errors(_load(path.read_text("utf-8")))]
    assert errors == []


def _doc_examples() -> list[str]:
    text = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    return re.findall(r"```yaml\n(.*?)```", text, re.S)


def _section(example: str) -> str:
    return next(line for line in example.splitlines() if not line.startswith(("#", "version")))


@pytest.mark.parametrize("example", _doc_examples(), ids=_section)
def test_language_reference_examples_validate(example: str) -> None:
    """The examples in docs/language.md are real files of the current language."""
    assert [e.message for e in _validator().iter_errors(_load(example))] == []


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("site: {name: t}\n", "'version' is a required property"),
        ("version: 1\nhost_group: []\n", "Additional properties are not allowed"),
        ("version: 2\n", "2 is greater than the maximum of 1"),
        (
            "version: 1\nvolumes:\n  - {name: v, provider: p, path: /v, capacity: 1TiB,"
            " mounted_bye: [g]}\n",
            "Additional properties are not allowed ('mounted_bye'",
        ),
        (
            "version: 1\npools: {storage: [{name: s, capacity: 2 PIB}]}\n",
            "does not match",
        ),
        ("version: 1\nsite: {name: t, join_deadline: 30 minutes}\n", "does not match"),
        ("version: 1\nproviders: [{name: p, kind: nfs}]\n", "is not one of"),
        (
            "version: 1\nproviders: [{name: c, kind: dataset-copy,"
            " params: {location: group/g, cache_rot: /c}}]\n",
            "Additional properties are not allowed ('cache_rot'",
        ),
        ("version: 1\nproviders: [{name: c, kind: dataset-copy}]\n", "'params' is a required"),
        (
            "version: 1\nproviders: [{name: f, kind: directory, params: {quota_backend: zfs}}]\n",
            "'zfs' is not one of",
        ),
    ],
)
def test_schema_flags_what_an_editor_should(text: str, why: str) -> None:
    """Not vacuous: typos, units and enums are caught in the editor already."""
    messages = [m for e in _validator().iter_errors(_load(text)) for m in _messages(e)]
    assert any(why in m for m in messages), messages


def _messages(error: jsonschema.ValidationError) -> list[str]:
    """An error and, through anyOf/oneOf, the reasons each branch failed."""
    return [error.message, *(m for c in error.context or () for m in _messages(c))]
