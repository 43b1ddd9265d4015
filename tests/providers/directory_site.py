"""A directory provider over real directories, shared by the directory provider's tests."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from reconciler.protocol import ErrorCode, Reply
from reconciler.providers.directory import DirectoryProvider
from reconciler.providers.registry import open_provider
from reconciler.transports import BuiltinTransport, Transport
from tests.helpers import call, succeeded
from tests.providers.kit import OWNER

DAY = 86400


class Site:
    """A directory provider over ``<tmp>/fs`` with volume ``shared`` at ``/shared``."""

    def __init__(self, tmp_path: Path, params: dict[str, Any] | None = None) -> None:
        self.tmp = tmp_path
        self.t: Transport = open_provider(
            "shared-fs", {"kind": "directory", "params": params or {}}, tmp_path
        )
        self.root = tmp_path / "fs" / "shared"
        self.ops = 0
        self.put("volume/shared", spec={"path": "/shared", "mode": "0755", "retention": DAY})

    @property
    def provider(self) -> DirectoryProvider:
        assert isinstance(self.t, BuiltinTransport)
        assert isinstance(self.t.provider, DirectoryProvider)
        return self.t.provider

    def request(self, verb: str, **params: Any) -> Reply:
        self.ops += 1
        return call(self.t, verb, op_id=f"op{self.ops}", epoch=1, owner=OWNER, params=params)

    def put(self, entry_id: str, verb: str = "create", **fields: Any) -> dict[str, Any]:
        return succeeded(self.request(verb, entry={"id": entry_id, **fields}))

    def refused(self, verb: str, code: ErrorCode, **params: Any) -> str:
        reply = self.request(verb, **params)
        assert not reply.ok and reply.error is not None, reply.to_json()
        assert reply.error.code is code, reply.to_json()
        return str(reply.error.message)

    def cleanup(self, retention: int = DAY) -> dict[str, Any]:
        """Run the retention clean-up of volume ``shared``; it must succeed."""
        entry = {"id": "volume/shared", "spec": {"retention": retention}}
        return succeeded(self.request("update", action="cleanup", entry=entry))


class Clock:
    """The provider's clock, ``later`` seconds ahead of the real one.

    A file's ctime cannot be set back, so a tree "three days old" is made by moving the
    provider's clock three days ahead instead; ``touch`` then writes a file "now" on that
    clock (its mtime; its ctime stays the real time, days "ago").
    """

    def __init__(self, site: Site, later: float) -> None:
        self.offset = later
        site.provider.clock = self.now

    def now(self) -> float:
        return time.time() + self.offset

    def set_age(self, path: Path, seconds: float) -> None:
        """Make ``path``'s mtime ``seconds`` before the provider's now (links themselves)."""
        then = self.now() - seconds
        os.utime(path, (then, then), follow_symlinks=False)
