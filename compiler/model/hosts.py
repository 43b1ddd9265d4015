"""Host groups (``host_groups:``): static config hosts and provisioned groups (PR-4)."""

from __future__ import annotations

from pydantic import Field, model_validator

from compiler.model.types import Amount, Count, Description, Duration, Label, Name, Strict


class HostOverride(Strict):
    """Per-host values that replace the group's (counters merge; features replace)."""

    counters: dict[Name, Amount] = Field(default_factory=dict)
    features: list[Name] | None = None
    rack: Label | None = None
    switch: Label | None = None


class Provisioned(Strict):
    """A group whose hosts a provider creates on demand (cloud burst)."""

    provider: Name
    template: Label
    count: Count | None = None
    min: Count | None = None
    max: Count | None = None
    join_deadline: Duration | None = None

    @model_validator(mode="after")
    def _bounds(self) -> Provisioned:
        if self.count is not None and (self.min is not None or self.max is not None):
            raise ValueError("give either 'count' or 'min'/'max', not both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"'min' ({self.min}) is larger than 'max' ({self.max})")
        return self


class HostGroup(Strict):
    name: Name
    description: Description = ""
    hosts: str = ""
    counters: dict[Name, Amount] = Field(default_factory=dict)
    features: list[Name] = Field(default_factory=list)
    rack: Label | None = None
    switch: Label | None = None
    overrides: dict[str, HostOverride] = Field(default_factory=dict)
    provisioned: Provisioned | None = None
