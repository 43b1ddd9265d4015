"""A JSON Schema of one site-config file, for editors (yaml-language-server)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, create_model

from compiler.model.datasets import Cache, Dataset
from compiler.model.document import LANGUAGE_VERSION
from compiler.model.hosts import HostGroup
from compiler.model.pools import Pools
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
    schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    schema["title"] = "xce-gitops site-config file"
    return schema
