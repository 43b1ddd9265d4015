"""Datasets (``datasets:``) and caches (``caches:``): immutable ``name@version`` (PR-5)."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field
from pydantic_core import PydanticCustomError

from compiler.core import forms
from compiler.core.forms import JsonForm
from compiler.core.names import shown
from compiler.core.types import (
    MAX_REASON,
    DatasetName,
    Description,
    Name,
    Size,
    Strict,
    Version,
    one_line,
)

DIGEST_PATTERN = r"^sha256:[0-9a-f]{64}$"
_DIGEST_RE = re.compile(DIGEST_PATTERN)
_DIGEST_FORM = "'sha256:' and 64 lowercase hex digits"
# What a missing or malformed digest's problem says to do; PATH is the dataset's when known
# (compiler/model/document.py, ``_dataset_path``).
DIGEST_HINT = (
    "compute it with xce-digest PATH (PATH: the dataset's folder or file) and write the "
    "sha256:… it prints as 'digest:'"
)


def digest_hint(path: str | None) -> str:
    """DIGEST_HINT, naming the dataset's files where they are known."""
    if path is None:
        return DIGEST_HINT
    where = "" if path.startswith("/") else " in the site folder"
    return (
        f"compute it{where} with 'xce-digest {path}' (the dataset's source) and write the "
        "sha256:… it prints as 'digest:'"
    )


def _digest(v: Any) -> Any:
    """A malformed digest says what a digest is, and the hint how to get one."""
    if not isinstance(v, str) or not _DIGEST_RE.fullmatch(v):
        text = shown(v) if isinstance(v, str) else repr(v)[:40]
        raise PydanticCustomError("digest", f"{text} is not a dataset digest: {_DIGEST_FORM}")
    return v


Digest = Annotated[
    str,
    BeforeValidator(_digest),
    JsonForm(lambda: {"type": "string", "pattern": DIGEST_PATTERN,
                      "errorMessage": f"a dataset digest: {_DIGEST_FORM} (xce-digest PATH)"}),
]


# The digest a correction replaces: as it was applied, never what xce-digest gives now.
AppliedDigest = Annotated[str, Field(pattern=DIGEST_PATTERN)]


def _one_line(text: str) -> str:
    """A correction's reason: one line, like every reason (``one_line``)."""
    return one_line(text, "a correction needs a reason: say why the applied version is wrong")


Reason = Annotated[str, AfterValidator(_one_line), JsonForm(lambda: forms.reason_form(MAX_REASON))]


class Replaced(Strict):
    """The applied version a correction replaces, exactly as the cluster has it."""

    digest: AppliedDigest = Field(
        description="the digest of the version as it was applied",
        examples=["sha256:" + "0" * 63 + "1"],
    )
    size: Size = Field(description="the size of the version as it was applied", examples=["150GiB"])


class Correction(Strict):
    """An explicit in-place fix of an applied ``name@version``: why, and what it replaces.

    Naming what it replaces keeps it to one change: left in the file after it is applied, it
    does not let a later edit of the same version through.
    """

    reason: Reason = Field(
        description="why the applied version is corrected in place: one line, shown on the "
        "plan's actions",
        examples=["the first upload of train/ was truncated; re-uploaded 2026-11-30"],
    )
    replaces: Replaced = Field(
        description="the version exactly as it was applied (XCE790's hint prints it)",
        examples=[{"digest": "sha256:" + "0" * 63 + "1", "size": "150GiB"}],
    )


class Copy(Strict):
    location: str = Field(
        description="where the copy should be: a location with a cache", examples=["group/gpu"]
    )
    provider: Name = Field(
        description="the provider of that location's cache", examples=["gpu-cache"]
    )


class Dataset(Strict):
    name: DatasetName = Field(
        description="the dataset's name; name@version is unique", examples=["imagenet"]
    )
    version: Version = Field(
        description="the version: a whole number or a text; quote one that YAML reads "
        'otherwise ("3.10")',
        examples=[3, "2024-06"],
    )
    description: Description = Field(
        default="",
        description="what the dataset is, for people",
        examples=["ImageNet-1k training set"],
    )
    size: Size = Field(
        description="charged to the cache of every location holding a copy", examples=["150GiB"]
    )
    digest: Digest = Field(
        description="the digest a staged copy is verified against (xce-digest PATH)",
        examples=["sha256:" + "0" * 63 + "1"],
    )
    source: str = Field(
        description="where the provider fetches the dataset from", examples=["imagenet@3"]
    )
    copies: list[Copy] = Field(
        default_factory=list,
        description="where copies should be, one per location",
        examples=[[{"location": "group/gpu", "provider": "gpu-cache"}]],
    )
    correction: Correction | None = Field(
        default=None,
        description="an explicit in-place fix of a version already applied",
        examples=[
            {
                "reason": "the upload was truncated",
                "replaces": {"digest": "sha256:" + "0" * 63 + "1", "size": "150GiB"},
            }
        ],
    )

    @property
    def ident(self) -> str:
        """``name@version``: the dataset's identity, which never changes its bytes."""
        return f"{self.name}@{self.version}"


class Cache(Strict):
    """A location's dataset cache: its capacity is charged by the copies held there."""

    location: str = Field(
        description="the location of the cache, one per location", examples=["group/gpu"]
    )
    capacity: Size = Field(
        description="what the copies at the location may add up to", examples=["40TiB"]
    )
    provider: Name = Field(
        description="the dataset-copy (or external) provider that holds the copies",
        examples=["gpu-cache"],
    )
