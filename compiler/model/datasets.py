"""Datasets (``datasets:``) and caches (``caches:``): immutable ``name@version`` (PR-5)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from compiler.model.types import DatasetName, Description, Name, Size, Strict, Version

Digest = Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]


class Copy(Strict):
    location: str
    provider: Name


class Dataset(Strict):
    name: DatasetName
    version: Version
    description: Description = ""
    size: Size
    digest: Digest
    source: str
    copies: list[Copy] = Field(default_factory=list)


class Cache(Strict):
    """A location's dataset cache: its capacity is charged by the copies held there."""

    location: str
    capacity: Size
    provider: Name
