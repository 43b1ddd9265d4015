"""A JSON Schema of one site-config file, for editors (yaml-language-server).

Generated from the models the compiler validates with (``compiler/model/``), each value
type in its JSON form (``compiler/core/forms.py``); tests/compiler/test_schema_agreement.py
checks that it accepts exactly what the compiler accepts, file by file.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from compiler.contract.provider_params import BUILTIN_PARAMS
from compiler.core import forms
from compiler.model.file import SiteFile
from compiler.model.providers import Provider

DIALECT = "http://json-schema.org/draft-07/schema#"  # what editors read (docs/editors.md)


class _Generator(GenerateJsonSchema):
    """Pydantic's generator, with a mapping's keys checked as a whole (``propertyNames``)."""

    def dict_schema(self, schema: core_schema.DictSchema) -> JsonSchemaValue:
        """``propertyNames`` + ``additionalProperties``: pydantic's ``patternProperties``
        would let a key that does not match through, unchecked."""
        out: dict[str, Any] = {"type": "object"}
        keys = schema.get("keys_schema")
        if keys is not None:
            names = {k: v for k, v in self.generate_inner(keys).items() if k != "title"}
            out["propertyNames"] = names or {"type": "string"}
        values = schema.get("values_schema")
        if values is not None:
            out["additionalProperties"] = self.generate_inner(values)
        return out


def site_file_schema() -> dict[str, Any]:
    schema = SiteFile.model_json_schema(mode="validation", schema_generator=_Generator)
    models = schema.pop("$defs")
    _params_by_kind(models)
    forms_used: dict[str, Any] = {}  # the named value forms, filled as they are met
    for name, form in (
        (forms.JSON_VALUE, forms.json_value_form()),
        (forms.SECRET_VALUE, forms.secret_value_form()),
        (forms.JSON_DATA, forms.json_data_form()),
    ):
        forms_used[name] = _finished(form, forms_used)
    finished: dict[str, Any] = _finished(schema, forms_used)
    finished["$defs"] = dict(sorted({**_finished(models, forms_used), **forms_used}.items()))
    finished["$schema"] = DIALECT
    finished["title"] = "xce-gitops site-config file"
    return finished


def value_schema(annotation: Any) -> dict[str, Any]:
    """The JSON form of one value type (``Size``, ``Name``…) as the file schema holds it."""
    form: dict[str, Any] = _finished(
        TypeAdapter(annotation).json_schema(schema_generator=_Generator), None
    )
    return form


def _params_by_kind(defs: dict[str, Any]) -> None:
    """A built-in provider's ``params`` follow its kind's model (draft-07 ``if``/``then``), so
    editors flag a misspelt param as the compiler does."""
    branches = []
    for kind, params in BUILTIN_PARAMS.items():
        sub = params.model_json_schema(
            mode="validation", ref_template="#/$defs/{model}", schema_generator=_Generator
        )
        defs.update(sub.pop("$defs", {}))
        defs[params.__name__] = sub
        then: dict[str, Any] = {"properties": {"params": {"$ref": f"#/$defs/{params.__name__}"}}}
        if sub.get("required"):
            then["required"] = ["params"]
        branches.append(
            {"if": {"properties": {"kind": {"const": kind}}, "required": ["kind"]}, "then": then}
        )
    defs[Provider.__name__]["allOf"] += branches


_END = re.compile(r"(?<!\\)\$$")


def _finished(node: Any, defs: dict[str, Any] | None) -> Any:
    """The schema with each named form in ``defs`` (or written in place, without ``defs``),
    and every ``pattern`` ending at the very end of the text: Python's ``$`` also matches
    before a final newline, JavaScript's does not, and the compiler takes the whole text."""
    if isinstance(node, list):
        return [_finished(n, defs) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _finished(v, defs) for k, v in node.items()}
    name = out.pop(forms.REF_SLOT, None)
    if name is not None:
        form = _finished(forms.named_form(name), defs)
        if defs is None:
            return {**form, **out}
        defs.setdefault(name, form)
        out = {"$ref": f"#/$defs/{name}", **out}
    pattern = out.get("pattern")
    if isinstance(pattern, str) and _END.search(pattern):
        out["pattern"] = pattern[:-1] + "(?!\\n)$"
    return out
