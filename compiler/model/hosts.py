"""Host groups (``host_groups:``): static config hosts and provisioned groups (PR-4)."""

from __future__ import annotations

from pydantic import ConfigDict, Field, model_validator

from compiler.model.forms import given, unset
from compiler.model.types import (
    Amount,
    Count,
    Description,
    Duration,
    Hostlist,
    HostlistKey,
    Label,
    Name,
    Strict,
)

_COUNT_OR_BOUNDS = "give either 'count' or 'min'/'max', not both"
COUNTERS = "counters of each host (slots, mem, gpu, nvme, …): a count or a size"


class HostOverride(Strict):
    """Per-host values that replace the group's (counters merge; features replace)."""

    counters: dict[Name, Amount] = Field(
        default_factory=dict,
        description="counters for these hosts, merged over the group's key by key",
        examples=[{"mem": "1TiB"}],
    )
    features: list[Name] | None = Field(
        default=None,
        description="features of these hosts, replacing the group's",
        examples=[["avx512", "ib-hdr", "bigmem-lite"]],
    )
    rack: Label | None = Field(
        default=None, description="the rack of these hosts, replacing the group's", examples=["A01"]
    )
    switch: Label | None = Field(
        default=None,
        description="the switch of these hosts, replacing the group's",
        examples=["leaf-a"],
    )


class Provisioned(Strict):
    """A group whose hosts a provider creates on demand (cloud burst)."""

    model_config = ConfigDict(
        json_schema_extra={
            "if": given("count"),
            "then": unset("min", "max", why=_COUNT_OR_BOUNDS),
        }
    )

    provider: Name = Field(
        description="the exec or jsonl provider that creates the instances",
        examples=["cloud-burst"],
    )
    template: Label = Field(
        description="the provider's instance template (machine type, image)",
        examples=["c6i.8xlarge"],
    )
    count: Count | None = Field(
        default=None,
        description="how many hosts are desired: the first 'count' names of the group's hosts",
        examples=[8],
    )
    min: Count | None = Field(
        default=None, description="instead of 'count': how many hosts are desired now", examples=[2]
    )
    max: Count | None = Field(
        default=None,
        description="instead of 'count': how many hosts may exist at most",
        examples=[16],
    )
    join_deadline: Duration | None = Field(
        default=None,
        description="how long a new instance may take to join; default the site's",
        examples=["15m"],
    )

    @model_validator(mode="after")
    def _bounds(self) -> Provisioned:
        if self.count is not None and (self.min is not None or self.max is not None):
            raise ValueError(_COUNT_OR_BOUNDS)
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"'min' ({self.min}) is larger than 'max' ({self.max})")
        return self


class HostGroup(Strict):
    name: Name = Field(description="the group's name, unique among host groups", examples=["cpu-a"])
    description: Description = Field(
        default="",
        description="what the group is, for people",
        examples=["Intel CPU nodes, racks A01-A08"],
    )
    hosts: Hostlist = Field(
        default="",
        description="the group's hosts as a Slurm hostlist; for a provisioned group every name "
        "it may use",
        examples=["cn[0001-0512]"],
    )
    counters: dict[Name, Amount] = Field(
        default_factory=dict,
        description=COUNTERS + ", merged over the site's default counters",
        examples=[{"slots": 64, "mem": "256GiB"}],
    )
    features: list[Name] = Field(
        default_factory=list,
        description="attributes placement can ask for, added to the site's default features",
        examples=[["avx512", "ib-hdr"]],
    )
    rack: Label | None = Field(default=None, description="the rack of each host", examples=["A"])
    switch: Label | None = Field(
        default=None, description="the switch of each host", examples=["leaf-a"]
    )
    overrides: dict[HostlistKey, HostOverride] = Field(
        default_factory=dict,
        description="per-host values for some of the group's own hosts, by hostlist",
        examples=[{"cn[0001-0004]": {"counters": {"mem": "1TiB"}}}],
    )
    provisioned: Provisioned | None = Field(
        default=None,
        description="the group's hosts are created on demand by a provider (cloud burst)",
        examples=[{"provider": "cloud-burst", "template": "c6i.8xlarge", "count": 8}],
    )
