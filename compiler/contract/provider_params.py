"""The provider kinds, and the ``params`` of each built-in kind: one model per kind.

This is the one list of kinds. The compiler validates a built-in provider's ``params``
against its model, with positions: an unknown or misspelt key is an XCE101 with the
nearest key, at its line, instead of a default silently used in its place; and
``bindings.json`` carries the params as validated. External kinds (``exec``, ``jsonl``)
take any params: their program reads them.

Paths are relative to the provider's workdir unless marked ``SiteRelative``: those are
inputs that live with the site-config (dataset sources) and are resolved against the
site folder (``site_relative_fields``).
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Annotated, Literal, get_args

from pydantic import AfterValidator, ConfigDict, Field, ValidationInfo, field_validator

from compiler.core import forms
from compiler.core.forms import JsonForm
from compiler.core.types import PositiveDuration, SafeName, Size, Strict, VolumePath

BuiltinKind = Literal["directory", "dataset-copy", "controller-map"]
ExternalKind = Literal["exec", "jsonl"]
ProviderKind = Literal[BuiltinKind, ExternalKind]
BUILTIN_KINDS: tuple[BuiltinKind, ...] = get_args(BuiltinKind)
EXTERNAL_KINDS: tuple[ExternalKind, ...] = get_args(ExternalKind)
PROVIDER_KINDS: tuple[str, ...] = (*BUILTIN_KINDS, *EXTERNAL_KINDS)

# Placeholders a directory provider's quota_command may use.
QUOTA_FIELDS = ("scope", "subject", "bytes", "kib", "path", "volume")


@dataclass(frozen=True, slots=True)
class SiteRelative:
    """Marks a path param resolved against the site folder, not the workdir."""


PathParam = Annotated[str, Field(min_length=1, pattern=r"^[^\x00]+$")]


def _template(part: str) -> str:
    """One argv part of quota_command: placeholders only from QUOTA_FIELDS, each alone
    (``{kib}``; a conversion or format such as ``{kib!r}`` or ``{kib:{x}}`` is refused)."""
    try:
        fields = [(name, spec, conv) for _, name, spec, conv in string.Formatter().parse(part)]
    except ValueError as err:  # a lone '{' or '}'; '{{' is a literal brace
        raise ValueError(f"{part!r} is not a template: {err}; write '{{{{' for a brace") from None
    for name, spec, conversion in fields:
        if name is not None and name not in QUOTA_FIELDS:
            known = ", ".join("{" + f + "}" for f in QUOTA_FIELDS)
            raise ValueError(f"placeholder {{{name}}} is unknown; use {known}")
        if name is not None and (spec or conversion):
            raise ValueError(f"{part!r}: write the placeholder alone, as {{{name}}}")
    return part


Template = Annotated[
    str, AfterValidator(_template), JsonForm(lambda: forms.template_form(QUOTA_FIELDS))
]
_NEEDS_COMMAND = "quota_backend 'command' needs quota_command: a list of argv strings"


class DirectoryParams(Strict):
    """The params of a `directory` provider: shared volumes, user directories, quotas."""

    model_config = ConfigDict(
        json_schema_extra={
            "if": {
                "properties": {"quota_backend": {"const": "command"}},
                "required": ["quota_backend"],
            },
            # at the params, where the compiler reports it (at quota_backend)
            "then": {
                "required": ["quota_command"],
                "not": {"properties": {"quota_command": {"type": "null"}}},
            },
        }
    )

    base: PathParam = Field(
        default="fs",
        description="the folder volume paths are under; / in production",
        examples=["/"],
    )
    volumes: dict[SafeName, VolumePath] = Field(
        default_factory=dict,
        description="volumes to report before any create adopts them",
        examples=[{"shared": "/shared/xce"}],
    )
    quota_command: list[Template] | None = Field(
        default=None,
        min_length=1,
        description="with quota_backend command: the argv template that sets a quota",
        examples=[["setquota", "-u", "{subject}", "0", "{kib}", "0", "0", "{path}"]],
    )
    quota_backend: Literal["ledger", "command"] = Field(
        default="ledger",
        description="how quotas are set: recorded in a ledger, or by running quota_command",
        examples=["ledger"],
    )
    quota_timeout: PositiveDuration = Field(
        default=60, description="how long quota_command may run", examples=["60s"]
    )

    @field_validator("quota_backend")
    @classmethod
    def _needs_command(cls, v: str, info: ValidationInfo) -> str:
        # quota_command is validated first; missing from info.data when it was invalid
        if v == "command" and "quota_command" in info.data and info.data["quota_command"] is None:
            raise ValueError(_NEEDS_COMMAND)
        return v


class DatasetCopyParams(Strict):
    """The params of a `dataset-copy` provider: verified dataset copies in one cache."""

    location: str = Field(
        pattern=r"^[^@]+$",
        description="the location of the cache the copies are in",
        examples=["group/gpu"],
    )
    cache_root: PathParam | None = Field(
        default=None,
        description="the cache folder; default cache/<provider>",
        examples=["/cache/gpu"],
    )
    source_base: Annotated[PathParam | None, SiteRelative()] = Field(
        default=None,
        description="what relative dataset sources are under (a relative one: under the site "
        "folder); default the workdir",
        examples=["/datasets"],
    )
    capacity: Size | None = Field(
        default=None, description="what the cache may hold", examples=["40TiB"]
    )


class ControllerMapParams(Strict):
    """The params of the `controller-map` provider: the map of hosts, counters, pools."""

    path: PathParam | None = Field(
        default=None,
        description="the map file; default providers/<name>/map.sqlite",
        examples=["/var/lib/xce/map.sqlite"],
    )


BUILTIN_PARAMS: dict[str, type[Strict]] = {  # a key for each of BUILTIN_KINDS
    "directory": DirectoryParams,
    "dataset-copy": DatasetCopyParams,
    "controller-map": ControllerMapParams,
}


def site_relative_fields(model: type[Strict]) -> tuple[str, ...]:
    """The params of ``model`` that are paths relative to the site folder."""
    return tuple(
        name
        for name, info in model.model_fields.items()
        if any(isinstance(m, SiteRelative) for m in info.metadata)
    )
