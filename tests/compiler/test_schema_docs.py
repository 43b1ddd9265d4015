"""Every key of the editor schema has a description and an example, so an editor shows what
it means on hover (docs/editors.md); the descriptions say it in one sentence."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from compiler.emit.schema import site_file_schema

SCHEMA = site_file_schema()


def _properties(node: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Each property schema anywhere in the schema, with a readable path."""
    if isinstance(node, list):
        for item in node:
            yield from _properties(item, path)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                for name, sub in value.items():
                    yield f"{path}.{name}", sub
                    yield from _properties(sub, f"{path}.{name}")
            elif key == "$defs":
                for name, sub in value.items():
                    yield from _properties(sub, name)
            elif key not in ("examples", "default", "const", "enum"):
                yield from _properties(value, path)


def _documented() -> list[tuple[str, dict[str, Any]]]:
    """The properties that carry a schema of their own (not the ``if`` conditions' and
    ``then`` branches' restatements of a property, which editors do not show on hover)."""
    out = []
    for path, schema in _properties(SCHEMA):
        if "description" in schema or "examples" in schema or "title" in schema:
            out.append((path, schema))
    return out


def test_the_walk_sees_the_whole_language() -> None:
    """Not vacuous: every section's keys are walked, built-in params included."""
    paths = {path for path, _ in _documented()}
    assert len(paths) > 120
    for path in (
        ".version",
        "Site.release_orphans",
        "RootDir.mode",
        "DirectoryParams.quota_command",
        "Waiver.expires",
        "Quota.users",
        "HostGroup.overrides",
        ".policy",
    ):
        assert path in paths


@pytest.mark.parametrize(("path", "schema"), _documented(), ids=[p for p, _ in _documented()])
def test_property_has_a_description_and_an_example(path: str, schema: dict[str, Any]) -> None:
    description = schema.get("description", "")
    assert description, f"{path}: no description"
    assert description[0].islower() and not description.endswith("."), "a phrase, as the others"
    assert len(description) <= 160, "one sentence: an editor shows it on hover"
    assert schema.get("examples"), f"{path}: no example"


def test_condition_branches_restate_only_known_properties() -> None:
    """The properties that ``if``/``then`` name (without a description of their own) are
    properties that have one where they are defined."""
    documented = {path.rsplit(".", 1)[-1] for path, _ in _documented()}
    for path, schema in _properties(SCHEMA):
        if not ("description" in schema or "title" in schema):
            assert path.rsplit(".", 1)[-1] in documented, path
