"""Host groups (``host_groups:``): static config hosts and provisioned groups (PR-4)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from compiler.core import forms
from compiler.core.forms import JsonForm, given, unset
from compiler.core.names import TOPOLOGY_KEY, invisible_reason, shown, too_long_reason
from compiler.core.types import (
    Count,
    Counters,
    Description,
    Hostlist,
    HostlistKey,
    Label,
    MinutesDuration,
    Name,
    Strict,
)

_COUNT_OR_BOUNDS = "give either 'count' or 'min'/'max', not both"
COUNTERS = (
    "counters of each host: slots, cpus, cores, gpu, gpus take a plain number; any other "
    "(mem, nvme, …) a count or a size"
)
_KEY_FORM = "letters, digits, '.', '_', '-' or '/', starting and ending with a letter or digit"
SHORTHANDS = ("rack", "switch")  # ``rack: A`` is ``topology: {rack: A}``


def _topology_key(v: Any) -> str:
    if not isinstance(v, str):
        raise PydanticCustomError("string_type", "expected a topology key (a string)")
    reason = too_long_reason(v) or invisible_reason(v)
    if reason is None and not TOPOLOGY_KEY.fullmatch(v):
        reason = _KEY_FORM
    if reason:
        raise PydanticCustomError("name", f"{shown(v)} is not a topology key: {reason}")
    return v


def _topology_label(v: str) -> str:
    """Not empty: a place with an empty label is no place (the protocol refuses it)."""
    if not v:
        raise PydanticCustomError("name", "a topology label is empty: name the place, or "
                                  "leave the key out")
    return v


TopologyKey = Annotated[
    str,
    BeforeValidator(_topology_key),
    JsonForm(
        lambda: {
            **forms.name_form(f"^{TOPOLOGY_KEY.pattern}$"),
            "errorMessage": "a topology key: " + _KEY_FORM,
        },
        "topology-key",
    ),
]
TopologyLabel = Annotated[
    Label,
    AfterValidator(_topology_label),
    JsonForm(lambda: {**forms.label_form(), "minLength": 1}, "topology-label"),
]
TOPOLOGY = "where the hosts are: topology key (one of site.topology) → label"
# Editors flag a key written both as a shorthand and in the map, as the compiler does.
_ONE_SPELLING = ConfigDict(json_schema_extra={"allOf": [
    {"if": given(key), "then": {"properties": {"topology": {
        "not": {"required": [key]},
        "errorMessage": f"'{key}' is given already, by the shorthand '{key}:'",
    }}}}
    for key in SHORTHANDS
]})


class HostOverride(Strict):
    """Per-host values that replace the group's (counters and topology merge; features
    replace)."""

    model_config = _ONE_SPELLING

    counters: Counters = Field(
        default_factory=dict,
        description="counters for these hosts, merged over the group's key by key",
        examples=[{"mem": "1TiB"}],
    )
    features: list[Name] | None = Field(
        default=None,
        description="features of these hosts, replacing the group's",
        examples=[["avx512", "ib-hdr", "bigmem-lite"]],
    )
    rack: TopologyLabel | None = Field(
        default=None, description="shorthand for topology.rack", examples=["A01"]
    )
    switch: TopologyLabel | None = Field(
        default=None, description="shorthand for topology.switch", examples=["leaf-a"]
    )
    topology: dict[TopologyKey, TopologyLabel] = Field(
        default_factory=dict,
        description=TOPOLOGY + ", merged over the group's key by key",
        examples=[{"rack": "A02"}],
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
    join_deadline: MinutesDuration | None = Field(
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
    model_config = _ONE_SPELLING

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
    counters: Counters = Field(
        default_factory=dict,
        description=COUNTERS + ", merged over the site's default counters",
        examples=[{"slots": 64, "mem": "256GiB"}],
    )
    features: list[Name] = Field(
        default_factory=list,
        description="attributes placement can ask for, added to the site's default features",
        examples=[["avx512", "ib-hdr"]],
    )
    rack: TopologyLabel | None = Field(
        default=None, description="shorthand for topology.rack", examples=["A"]
    )
    switch: TopologyLabel | None = Field(
        default=None, description="shorthand for topology.switch", examples=["leaf-a"]
    )
    topology: dict[TopologyKey, TopologyLabel] = Field(
        default_factory=dict,
        description=TOPOLOGY + " of each host",
        examples=[{"rack": "A", "switch": "leaf-a", "block": "b1"}],
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


def topology_of(item: HostGroup | HostOverride) -> dict[str, str]:
    """A group's or override's own topology: the ``rack``/``switch`` shorthands and the
    ``topology`` map (a key in both is refused by the checks)."""
    out = {key: label for key in SHORTHANDS if (label := getattr(item, key)) is not None}
    out.update(item.topology)
    return out
