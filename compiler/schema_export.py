"""A JSON Schema of one site-config file, for editors (yaml-language-server)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, create_model

from compiler.model.datasets import Cache, Dataset
from compiler.model.document import LANGUAGE_VERSION
from compiler.model.hosts import HostGroup
from compiler.model.pools import Pools
from compiler.model.provider_params import BUILTIN_PARAMS
from compiler.model.providers import Provider, Proxy
from compiler.model.quotas import Quota
from compiler.model.site import Site
from compiler.model.types import Strict
from compiler.model.volumes import Volume


def site_file_schema() -> dict[str, Any]:
    model = create_model(
        "SiteConfigFile",
        __base__=Strict,
        version=(
            int,
            Field(description="language version of this file", ge=1, le=LANGUAGE_VERSION),
        ),
        site=(Site | None, None),
        host_groups=(list[HostGroup], []),
        pools=(Pools | None, None),
        datasets=(list[Dataset], []),
        caches=(list[Cache], []),
        volumes=(list[Volume], []),
        quotas=(list[Quota], []),
        providers=(list[Provider], []),
        proxies=(list[Proxy], []),
        policy=(
            dict[str, Any] | None,
            Field(None, description="site extensions of the opcode policies, see docs/policies.md"),
        ),
    )
    schema = model.model_json_schema(mode="validation")
    _params_by_kind(schema["$defs"])
    schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    schema["title"] = "xce-gitops site-config file"
    return schema


def _params_by_kind(defs: dict[str, Any]) -> None:
    """A built-in provider's ``params`` follow its kind's model (draft-07 ``if``/``then``), so
    editors flag a misspelt param as the compiler does."""
    branches = []
    for kind, params in BUILTIN_PARAMS.items():
        sub = params.model_json_schema(mode="validation", ref_template="#/$defs/{model}")
        defs.update(sub.pop("$defs", {}))
        defs[params.__name__] = sub
        then: dict[str, Any] = {"properties": {"params": {"$ref": f"#/$defs/{params.__name__}"}}}
        if sub.get("required"):
            then["required"] = ["params"]
        branches.append(
            {"if": {"properties": {"kind": {"const": kind}}, "required": ["kind"]}, "then": then}
        )
    defs[Provider.__name__]["allOf"] = branches
