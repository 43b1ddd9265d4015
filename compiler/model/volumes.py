"""Shared volumes (``volumes:``) with per-user directories (PR-6 refinement, N12, N14, N15)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from compiler.core.types import (
    Description,
    Label,
    Mode,
    Name,
    SafeName,
    Size,
    Strict,
    VolumePath,
)
from compiler.model.retention import RetentionForm

AccessMode = Literal[
    "single-node-writer",
    "single-node-reader-only",
    "multi-node-reader-only",
    "multi-node-single-writer",
    "multi-node-multi-writer",
]


class RootDir(Strict):
    mode: Mode = Field(
        default="0755",
        description="the permission mode of the volume's top directory",
        examples=["0755"],
    )
    owner: Label = Field(
        default="root", description="the owner of the top directory", examples=["root"]
    )
    group: Label = Field(
        default="root", description="the group of the top directory", examples=["root"]
    )


class UserDirs(Strict):
    mode: Mode = Field(
        default="0700",
        description="the permission mode of each user's directory",
        examples=["0700"],
    )
    owner: Literal["user"] = Field(
        default="user", description="each user's directory is owned by that user", examples=["user"]
    )


class UsedBy(Strict):
    """Which jobs use this volume (N15): by application profile, queue or project."""

    profiles: list[Name] = Field(
        default_factory=list,
        description="the application profiles whose jobs use the volume",
        examples=[["wrf"]],
    )
    queues: list[Name] = Field(
        default_factory=list,
        description="the queues whose jobs use the volume",
        examples=[["normal", "gpu"]],
    )
    projects: list[SafeName] = Field(
        default_factory=list,
        description="the projects whose jobs use the volume",
        examples=[["climate", "genomics"]],
    )


class Volume(Strict):
    name: SafeName = Field(
        description="the volume's name, unique among volumes", examples=["shared"]
    )
    description: Description = Field(
        default="", description="what the volume is, for people", examples=["Shared job I/O volume"]
    )
    provider: Name = Field(
        description="the directory (or external) provider that holds the volume",
        examples=["shared-fs"],
    )
    path: VolumePath = Field(
        description="the volume's top on the shared filesystem, an absolute path",
        examples=["/shared/xce"],
    )
    capacity: Size = Field(
        description="the volume's capacity; the quotas on it must fit", examples=["500TiB"]
    )
    access_mode: AccessMode = Field(
        default="multi-node-multi-writer",
        description="the CSI access mode",
        examples=["multi-node-multi-writer"],
    )
    mounted_by: list[Name] = Field(
        default_factory=list,
        description="the host groups whose hosts mount the volume",
        examples=[["cpu-a", "gpu"]],
    )
    root: RootDir = Field(
        default_factory=RootDir,
        description="mode, owner and group of the volume's top directory",
        examples=[{"mode": "0755", "owner": "root", "group": "root"}],
    )
    user_dirs: UserDirs = Field(
        default_factory=UserDirs,
        description="mode and owner of each user's directory",
        examples=[{"mode": "0700", "owner": "user"}],
    )
    retention: RetentionForm | None = Field(
        default=None,
        description="how long a job directory is kept after its job: a duration, or keep, "
        "from, unfetched, orphans; without it, kept",
        examples=["14d", {"keep": "7d", "from": "output-fetch", "unfetched": "30d"}],
    )
    used_by: UsedBy = Field(
        default_factory=UsedBy,
        description="which jobs use the volume: by application profile, queue or project",
        examples=[{"queues": ["normal", "gpu"], "projects": ["climate"]}],
    )
    default: bool = Field(
        default=False,
        description="the volume of the jobs that no volume's used_by claims; at most one",
        examples=[True],
    )
    users: list[SafeName] = Field(
        default_factory=list,
        description="users who get a directory (every user with a quota on it gets one too)",
        examples=[["alice", "bob"]],
    )
    overcommit: bool = Field(
        default=False,
        description="allow the quotas of a scope to add up to more than the capacity",
        examples=[False],
    )
