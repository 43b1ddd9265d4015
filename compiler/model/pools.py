"""Pools (``pools:``): license pools with borrowing, storage pools, custom counters (PR-1)."""

from __future__ import annotations

from pydantic import ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from compiler.core import forms
from compiler.core.types import (
    COUNT_COUNTERS,
    NO_UNIT,
    Amount,
    Count,
    Description,
    Name,
    Size,
    Strict,
    WrittenAsSize,
)


class Borrow(Strict):
    provider: Name = Field(
        description="the exec or jsonl provider that borrows seats", examples=["flexlm"]
    )
    max: Count = Field(description="at most this many seats borrowed", examples=[32])


class LicensePool(Strict):
    name: Name = Field(
        description="the pool's name, unique among license and storage pools", examples=["matlab"]
    )
    description: Description = Field(
        default="", description="what the pool is, for people", examples=["MATLAB network licenses"]
    )
    amount: Count = Field(description="the number of seats owned", examples=[64])
    borrow: Borrow | None = Field(
        default=None,
        description="seats borrowed on demand, up to a maximum",
        examples=[{"provider": "flexlm", "max": 32}],
    )


class StoragePool(Strict):
    name: Name = Field(
        description="the pool's name, unique among license and storage pools", examples=["scratch"]
    )
    description: Description = Field(
        default="", description="what the pool is, for people", examples=["Lustre scratch"]
    )
    capacity: Size = Field(description="the pool's capacity", examples=["2PiB"])


class CustomCounter(Strict):
    model_config = ConfigDict(json_schema_extra={
        "if": {"properties": {"name": {"enum": list(COUNT_COUNTERS)}}, "required": ["name"]},
        "then": {"properties": {"amount": {forms.REF_SLOT: "count"}}},
    })

    name: Name = Field(
        description="the counter's name, unique at its location", examples=["ib-uplink-gbps"]
    )
    location: str = Field(
        default="site",
        description="where the counter is: site, group/<g>, pool/<p> or host/<h>",
        examples=["site"],
    )
    amount: Amount = Field(description="how much there is: a count or a size", examples=[800])

    @field_validator("amount")
    @classmethod
    def _counts_things(cls, value: int, info: ValidationInfo) -> int:
        """A counter named as one that counts things (slots, gpu) takes a plain number."""
        name = info.data.get("name")
        if name in COUNT_COUNTERS and isinstance(value, WrittenAsSize):
            raise PydanticCustomError(
                "count", f"counter '{name}' counts things, but its amount is text: {NO_UNIT}"
            )
        return value


class Pools(Strict):
    """The ``pools:`` section; each list may be split across files, and may be empty."""

    licenses: list[LicensePool] | None = Field(
        default=None,
        description="license pools: a base amount plus optional borrowing",
        examples=[[{"name": "matlab", "amount": 64}]],
    )
    storage: list[StoragePool] | None = Field(
        default=None,
        description="storage pools: a capacity as a counter",
        examples=[[{"name": "scratch", "capacity": "2PiB"}]],
    )
    counters: list[CustomCounter] | None = Field(
        default=None,
        description="any other consumable amount at a location",
        examples=[[{"name": "ib-uplink-gbps", "location": "site", "amount": 800}]],
    )
