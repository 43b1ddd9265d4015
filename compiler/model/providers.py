"""Providers and proxies (``providers:``, ``proxies:``): PR-2, N2, P5."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from compiler.model.provider_params import ProviderKind
from compiler.model.types import (
    Description,
    Duration,
    JsonData,
    Label,
    Name,
    SecretRef,
    Size,
    Strict,
)


class Provider(Strict):
    name: Name
    description: Description = ""
    kind: ProviderKind
    command: list[str] | None = None
    # A built-in kind's params are checked against its model (provider_params.py).
    params: JsonData = Field(default_factory=dict)
    credentials: dict[str, SecretRef] = Field(default_factory=dict)
    account: Literal["dedicated", "shared"] | None = None
    timeout: Duration = 30
    # A longer reply fails the call and its provider is killed; the reconciler's default
    # for a binding without it is the same (reconciler/transports/base.py, tested).
    max_reply_bytes: Size = Field(default=256 * 2**20, gt=0)


class Proxy(Strict):
    name: Name
    description: Description = ""
    host: Label
    active: list[Name] = Field(default_factory=list)
    standby: list[Name] = Field(default_factory=list)
