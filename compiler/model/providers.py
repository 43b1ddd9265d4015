"""Providers and proxies (``providers:``, ``proxies:``): PR-2, N2, P5."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from compiler.model.types import Description, Duration, Name, SecretRef, Strict

ProviderKind = Literal["directory", "dataset-copy", "controller-map", "exec", "jsonl"]


class Provider(Strict):
    name: Name
    description: Description = ""
    kind: ProviderKind
    command: list[str] | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    credentials: dict[str, SecretRef] = Field(default_factory=dict)
    account: Literal["dedicated", "shared"] | None = None
    timeout: Duration = 30


class Proxy(Strict):
    name: Name
    description: Description = ""
    host: str
    active: list[Name] = Field(default_factory=list)
    standby: list[Name] = Field(default_factory=list)
