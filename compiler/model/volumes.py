"""Shared volumes (``volumes:``) with per-user directories (PR-6 refinement, N12, N14, N15)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from compiler.model.types import (
    Description,
    Duration,
    Label,
    Mode,
    Name,
    SafeName,
    Size,
    Strict,
    VolumePath,
)

AccessMode = Literal[
    "single-node-writer",
    "single-node-reader-only",
    "multi-node-reader-only",
    "multi-node-single-writer",
    "multi-node-multi-writer",
]


class RootDir(Strict):
    mode: Mode = "0755"
    owner: Label = "root"
    group: Label = "root"


class UserDirs(Strict):
    mode: Mode = "0700"
    owner: Literal["user"] = "user"


class UsedBy(Strict):
    """Which jobs use this volume (N15): by application profile, queue or project."""

    profiles: list[Name] = Field(default_factory=list)
    queues: list[Name] = Field(default_factory=list)
    projects: list[SafeName] = Field(default_factory=list)


class Volume(Strict):
    name: SafeName
    description: Description = ""
    provider: Name
    path: VolumePath
    capacity: Size
    access_mode: AccessMode = "multi-node-multi-writer"
    mounted_by: list[Name] = Field(default_factory=list)
    root: RootDir = Field(default_factory=RootDir)
    user_dirs: UserDirs = Field(default_factory=UserDirs)
    retention: Duration | None = None
    used_by: UsedBy = Field(default_factory=UsedBy)
    users: list[SafeName] = Field(default_factory=list)
    overcommit: bool = False
