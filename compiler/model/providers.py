"""Providers and proxies (``providers:``, ``proxies:``): PR-2, N2, P5."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field
from pydantic.config import JsonDict

from compiler.contract.provider_params import BUILTIN_KINDS, EXTERNAL_KINDS, ProviderKind
from compiler.core.types import (
    Description,
    Duration,
    JsonData,
    Label,
    Name,
    PositiveSize,
    SecretRef,
    Strict,
)


def _command_by_kind() -> JsonDict:
    """compiler/checks/providers.py's rule (XCE408): a command for external kinds only."""

    def kind_in(kinds: tuple[str, ...]) -> dict[str, Any]:
        return {"properties": {"kind": {"enum": list(kinds)}}, "required": ["kind"]}

    needs = "an exec or jsonl provider runs a program: give it as a list, e.g. [/opt/xce/cloud]"
    return {
        "allOf": [
            {
                "if": kind_in(EXTERNAL_KINDS),
                # at the provider, where the compiler reports it, whether empty or missing
                "then": {
                    "required": ["command"],
                    "not": {"properties": {"command": {"type": ["array", "null"], "maxItems": 0}}},
                    "errorMessage": needs,
                },
            },
            {
                "if": kind_in(BUILTIN_KINDS),
                "then": {
                    "properties": {
                        "command": {
                            "type": ["array", "null"],
                            "maxItems": 0,
                            "errorMessage": "a built-in provider takes no command",
                        }
                    }
                },
            },
        ]
    }


class Provider(Strict):
    # The schema export adds each built-in kind's params model to this allOf.
    model_config = ConfigDict(json_schema_extra=_command_by_kind())

    name: Name = Field(
        description="the provider's name, unique among providers", examples=["shared-fs"]
    )
    description: Description = Field(
        default="",
        description="what the provider is, for people",
        examples=["the shared filesystem"],
    )
    kind: ProviderKind = Field(
        description="built-in (directory, dataset-copy, controller-map) or external (exec, jsonl)",
        examples=["directory"],
    )
    command: list[str] | None = Field(
        default=None,
        description="the program and its arguments, for exec and jsonl providers",
        examples=[["/opt/xce/providers/cloud"]],
    )
    # A built-in kind's params are checked against its model (provider_params.py).
    params: JsonData = Field(
        default_factory=dict,
        description="provider-specific settings; a built-in kind takes only its own",
        examples=[{"base": "/", "quota_backend": "ledger"}],
    )
    credentials: dict[str, SecretRef] = Field(
        default_factory=dict,
        description="secrets the provider needs, by reference only: env:NAME or file:/path",
        examples=[{"api_token": "env:BURST_API_TOKEN"}],
    )
    account: Literal["dedicated", "shared"] | None = Field(
        default=None,
        description="for cloud providers: the cluster's own account, or one shared with others",
        examples=["shared"],
    )
    timeout: Duration = Field(
        default=30, description="how long one call to the provider may take", examples=["60s"]
    )
    # A longer reply fails the call and its provider is killed; the reconciler's default
    # for a binding without it is the same (reconciler/transports/base.py, tested).
    max_reply_bytes: PositiveSize = Field(
        default=256 * 2**20,
        description="the largest reply the provider may send; past it, it is killed",
        examples=["256MiB"],
    )


class Proxy(Strict):
    name: Name = Field(description="the proxy's name, unique among proxies", examples=["proxy-a"])
    description: Description = Field(
        default="", description="what the proxy is, for people", examples=["primary proxy"]
    )
    host: Label = Field(description="the host the proxy runs on", examples=["adm01"])
    active: list[Name] = Field(
        default_factory=list,
        description="the providers this proxy serves",
        examples=[["shared-fs", "gpu-cache"]],
    )
    standby: list[Name] = Field(
        default_factory=list,
        description="the providers it takes over when their active proxy is gone",
        examples=[["shared-fs"]],
    )
