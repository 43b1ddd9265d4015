"""A directory provider over real directories, shared by the directory provider's tests."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reconciler.protocol import ErrorCode, Reply
from reconciler.providers.directory import DirectoryProvider
from reconciler.providers.registry import open_provider
from reconciler.transports import BuiltinTransport, Transport
from tests.helpers import call, succeeded
from tests.providers.kit import OWNER, inventory

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

    def job_dir(self, user: str, job: str) -> dict[str, Any]:
        """The live ``job-dir`` entry, as a plan sees it in the inventory."""
        return dict(inventory(self.t)[f"job-dir/shared/{user}/{job}"])

    def evict(self, user: str, job: str, entry: Mapping[str, Any] | None = None,
              destroy: bool = True, op_id: str | None = None) -> Reply:
        """What ``xce-apply --destroy`` sends for the plan's ``evict`` of that entry."""
        seen = entry or self.job_dir(user, job)
        params: dict[str, Any] = {"id": seen["id"], "entry": seen, "action": "evict"}
        if destroy:
            params["destroy"] = True
        if op_id is None:
            return self.request("delete", **params)
        return call(self.t, "delete", op_id=op_id, epoch=1, owner=OWNER, params=params)
