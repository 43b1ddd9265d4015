"""The ``site:`` section: identity, discovery policy, join deadline and plan safety (PR-4, P6)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from compiler.model.types import Amount, Count, Description, Duration, Name, Strict

ManagementLevel = Literal["observe", "report", "correct", "correct-destructive"]
EntryKind = Literal[
    "host",
    "instance",
    "counter",
    "host-group",
    "license",
    "storage-pool",
    "dataset",
    "dataset-copy",
    "volume",
    "volume-dir",
    "quota",
]


Fraction = Annotated[float, Field(ge=0, le=1)]


class Safety(Strict):
    """octoDNS-style thresholds: a plan that changes too much at once is refused.

    Unset values take the planner's defaults (docs/plan.md, "Guards"), the one place they
    are defined: no limit on changes, 10 entries, 0.3 deleted, 0.5 created.
    """

    max_changes: Count | None = None
    min_entries: Count | None = None
    max_delete_fraction: dict[EntryKind | Literal["default"], Fraction] = Field(
        default_factory=dict
    )
    max_create_fraction: Fraction | None = None


class HostDefaults(Strict):
    counters: dict[Name, Amount] = Field(default_factory=dict)
    features: list[Name] = Field(default_factory=list)


class SiteDefaults(Strict):
    host: HostDefaults = Field(default_factory=HostDefaults)


class Site(Strict):
    name: Name
    description: Description = ""
    discovery: Literal["report", "admit", "reject"] = "report"
    join_deadline: Duration = 1800
    release_orphans: bool = True
    defaults: SiteDefaults = Field(default_factory=SiteDefaults)
    management: dict[EntryKind, ManagementLevel] = Field(default_factory=dict)
    safety: Safety = Field(default_factory=Safety)
    protected: list[str] = Field(default_factory=list)
