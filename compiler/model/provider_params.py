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

from pydantic import AfterValidator, Field, ValidationInfo, field_validator

from compiler.model.types import Duration, SafeName, Size, Strict, VolumePath

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
    """One argv part of quota_command: placeholders only from QUOTA_FIELDS."""
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(part)]
    except ValueError as err:  # a lone '{' or '}'; '{{' is a literal brace
        raise ValueError(f"{part!r} is not a template: {err}; write '{{{{' for a brace") from None
    for name in fields:
        if name is not None and name not in QUOTA_FIELDS:
            known = ", ".join("{" + f + "}" for f in QUOTA_FIELDS)
            raise ValueError(f"placeholder {{{name}}} is unknown; use {known}")
    return part


class DirectoryParams(Strict):
    """The params of a `directory` provider: shared volumes, user directories, quotas."""

    base: PathParam = Field("fs", description="the folder volume paths are under; / in production")
    volumes: dict[SafeName, VolumePath] = Field(
        default_factory=dict, description="volumes to report before any create adopts them"
    )
    quota_command: list[Annotated[str, AfterValidator(_template)]] | None = Field(
        None, min_length=1, description="with quota_backend command: the argv template"
    )
    quota_backend: Literal["ledger", "command"] = "ledger"
    quota_timeout: Annotated[Duration, Field(gt=0)] = 60

    @field_validator("quota_backend")
    @classmethod
    def _needs_command(cls, v: str, info: ValidationInfo) -> str:
        # quota_command is validated first; missing from info.data when it was invalid
        if v == "command" and "quota_command" in info.data and info.data["quota_command"] is None:
            raise ValueError("quota_backend 'command' needs quota_command: a list of argv strings")
        return v


class DatasetCopyParams(Strict):
    """The params of a `dataset-copy` provider: verified dataset copies in one cache."""

    location: str = Field(
        pattern=r"^[^@]+$", description="where the copies are, e.g. group/gpu"
    )
    cache_root: PathParam | None = Field(None, description="the cache folder; cache/<provider>")
    source_base: Annotated[PathParam | None, SiteRelative()] = Field(
        None, description="what relative dataset sources are under; default the workdir"
    )
    capacity: Size | None = Field(None, description="what the cache may hold")


class ControllerMapParams(Strict):
    """The params of the `controller-map` provider: the map of hosts, counters, pools."""

    path: PathParam | None = Field(None, description="the map file; providers/<name>/map.sqlite")


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
