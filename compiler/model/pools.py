"""Pools (``pools:``): license pools with borrowing, storage pools, custom counters (PR-1)."""

from __future__ import annotations

from pydantic import Field

from compiler.model.types import Amount, Count, Description, Name, Size, Strict


class Borrow(Strict):
    provider: Name
    max: Count


class LicensePool(Strict):
    name: Name
    description: Description = ""
    amount: Count
    borrow: Borrow | None = None


class StoragePool(Strict):
    name: Name
    description: Description = ""
    capacity: Size


class CustomCounter(Strict):
    name: Name
    location: str = "site"
    amount: Amount


class Pools(Strict):
    licenses: list[LicensePool] = Field(default_factory=list)
    storage: list[StoragePool] = Field(default_factory=list)
    counters: list[CustomCounter] = Field(default_factory=list)
