"""Quotas (``quotas:``): per user or project, on a volume or a pool (N8)."""

from __future__ import annotations

from typing import NamedTuple

from pydantic import Field, model_validator

from compiler.model.types import Amount, Name, SafeName, Strict


class Grant(NamedTuple):
    """One user's or project's limit, and the keys that lead to it inside its quota item."""

    scope: str  # "user" or "project"
    subject: str
    limit: int
    ypath: tuple[str, ...]


class Quota(Strict):
    """One quota, or a bulk form: ``users: {alice: 2TiB}`` / ``projects: {climate: 50TiB}``."""

    volume: SafeName | None = None
    pool: Name | None = None
    user: SafeName | None = None
    project: SafeName | None = None
    limit: Amount | None = None
    users: dict[SafeName, Amount] = Field(default_factory=dict)
    projects: dict[SafeName, Amount] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _shape(self) -> Quota:
        if (self.volume is None) == (self.pool is None):
            raise ValueError("a quota names exactly one of 'volume' or 'pool'")
        single = self.user is not None or self.project is not None
        if self.user is not None and self.project is not None:
            raise ValueError("a quota is for a 'user' or a 'project', not both")
        if single and self.limit is None:
            raise ValueError("a quota for one user or project needs a 'limit'")
        if not single and self.limit is not None:
            raise ValueError("'limit' goes with 'user' or 'project'")
        if not single and not self.users and not self.projects:
            raise ValueError("give 'user'/'project' with 'limit', or 'users'/'projects' maps")
        return self

    @property
    def target(self) -> tuple[str, str]:
        """``("volume", name)`` or ``("pool", name)``."""
        return ("volume", self.volume) if self.volume is not None else ("pool", self.pool or "")

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
