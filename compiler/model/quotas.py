"""Quotas (``quotas:``): per user or project, on a volume or a pool (N8)."""

from __future__ import annotations

from typing import Any, NamedTuple

from pydantic import ConfigDict, Field, model_validator

from compiler.contract.vocabulary import EntryKind
from compiler.core.forms import given, non_empty, unset
from compiler.core.types import Amount, Name, SafeName, Strict


class Grant(NamedTuple):
    """One user's or project's limit, and the keys that lead to it inside its quota item."""

    scope: str  # "user" or "project"
    subject: str
    limit: int
    ypath: tuple[str, ...]


_ONE_TARGET = "a quota names exactly one of 'volume' or 'pool'"
_ONE_SUBJECT = "a quota is for a 'user' or a 'project', not both"
_LIMIT_ALONE = "'limit' goes with 'user' or 'project'"
_LIMIT = "a size on a volume or storage pool, a number of seats on a license pool"


def _shape_schema() -> dict[str, Any]:
    """``Quota._shape`` as schema conditions, so an editor flags the same items."""
    single = {"anyOf": [given("user"), given("project")]}
    return {
        "allOf": [
            {"if": given("volume"), "then": unset("pool", why=_ONE_TARGET)},
            {"if": {"not": given("volume")}, "then": given("pool")},
            {
                "if": given("user"),
                "then": {"allOf": [unset("project", why=_ONE_SUBJECT), given("limit")]},
            },
            {"if": given("project"), "then": given("limit")},
            {
                "if": {"not": single},
                "then": {
                    "allOf": [
                        unset("limit", why=_LIMIT_ALONE),
                        {"anyOf": [non_empty("users"), non_empty("projects")]},
                    ]
                },
            },
        ]
    }


class Quota(Strict):
    """One quota, or a bulk form: ``users: {alice: 2TiB}`` / ``projects: {climate: 50TiB}``."""

    model_config = ConfigDict(json_schema_extra=_shape_schema())

    volume: SafeName | None = Field(
        default=None, description="the volume the quota is on (or give 'pool')", examples=["shared"]
    )
    pool: Name | None = Field(
        default=None,
        description="the license or storage pool the quota is on (or give 'volume')",
        examples=["matlab"],
    )
    user: SafeName | None = Field(
        default=None, description="the one user this quota is for, with 'limit'", examples=["alice"]
    )
    project: SafeName | None = Field(
        default=None,
        description="the one project this quota is for, with 'limit'",
        examples=["climate"],
    )
    limit: Amount | None = Field(
        default=None, description="the user's or project's limit: " + _LIMIT, examples=["2TiB", 16]
    )
    users: dict[SafeName, Amount] = Field(
        default_factory=dict,
        description="many users' limits, by user name: " + _LIMIT,
        examples=[{"alice": "2TiB", "bob": "4TiB"}],
    )
    projects: dict[SafeName, Amount] = Field(
        default_factory=dict,
        description="many projects' limits, by project name: " + _LIMIT,
        examples=[{"climate": "120TiB", "genomics": "80TiB"}],
    )

    @model_validator(mode="after")
    def _shape(self) -> Quota:
        if (self.volume is None) == (self.pool is None):
            raise ValueError(_ONE_TARGET)
        single = self.user is not None or self.project is not None
        if self.user is not None and self.project is not None:
            raise ValueError(_ONE_SUBJECT)
        if single and self.limit is None:
            raise ValueError("a quota for one user or project needs a 'limit'")
        if not single and self.limit is not None:
            raise ValueError(_LIMIT_ALONE)
        if not single and not self.users and not self.projects:
            raise ValueError("give 'user'/'project' with 'limit', or 'users'/'projects' maps")
        return self

    @property
    def target(self) -> tuple[str, str]:
        """``("volume", name)`` or ``("pool", name)``."""
        if self.volume is not None:
            return (EntryKind.VOLUME.value, self.volume)
        return ("pool", self.pool or "")

    def grants(self) -> list[Grant]:
        """Every limit this item sets, the bulk forms expanded."""
        out: list[Grant] = []
        if self.limit is not None:
            if self.user is not None:
                out.append(Grant("user", self.user, self.limit, ("user",)))
            if self.project is not None:
                out.append(Grant("project", self.project, self.limit, ("project",)))
        out += [Grant("user", u, lim, ("users", u)) for u, lim in self.users.items()]
        out += [Grant("project", p, lim, ("projects", p)) for p, lim in self.projects.items()]
        return out
