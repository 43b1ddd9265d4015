"""A real world with several kinds of drift, and ``xce-drift`` run in-process against it.

The e2e base site (tests/e2e/sites/base) is applied through the real providers, every host
joins, and then the world drifts the way it does at a site: an admin drains a host, a
user directory is removed by hand, another site creates a license at our controller,
config raises a quota that is only reported (management ``report``) and grows the
volume, and the cloud account stops answering.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest

import reconciler.cmds.drift as drift_cli
from reconciler.pipeline import compile_desired
from reconciler.protocol import Request
from reconciler.providers.registry import open_provider
from tests.e2e.steps import run_steps
from tests.e2e.workspace import (
    SITES,
    CliRun,
    Workspace,
    materialize,
    planning,
    run_cli_main,
)

HERE = Path(__file__).resolve().parent
HOSTS = "cn[01-04],gn[01-02],burst[01-02]"
APPLIED = [
    {"apply_site": True},
    {"report": ["join", HOSTS]},
    {"report": ["available", HOSTS]},
]
DRIFTED = [
    {"remove_tree": "fs/shared/bob"},
    {"foreign_entry": {"provider": "controller", "owner": "site/west",
                       "entry": {"id": "license/ansys@site", "kind": "license",
                                 "state": "available", "source": "config", "amount": 2}}},
    {"edit_site": {"file": "site.yaml", "replace": ["protected: [volume/shared]",
                                                   "protected: [volume/shared]\n"
                                                   "  management: {quota: report}"]}},
    {"edit_site": {"file": "storage.yaml",
                   "replace": ["{alice: 10GiB, bob: 20GiB}", "{alice: 15GiB, bob: 20GiB}"]}},
    {"edit_site": {"file": "storage.yaml", "replace": ["capacity: 100GiB", "capacity: 200GiB"]}},
]


def make_site(tmp_path: Path, *overlays: str) -> Workspace:
    """The base site with tests/drift/site/ and then each of ``overlays`` laid over it."""
    layers = [HERE / "site", *(HERE / o for o in overlays)]
    site = materialize(tmp_path / "site-config", SITES / "base", *layers)
    return Workspace(site=site, workdir=tmp_path / "work")


def drain_by_hand(ws: Workspace, host: str) -> None:
    """What an admin's ``scontrol drain`` does to the controller map: draining, then drained."""
    desired = compile_desired(ws.site)
    transport = open_provider("controller", desired.bindings.binding("controller"), ws.workdir)
    try:
        entry = desired.supply.entries[f"host/{host}"].to_json()
        reply = transport.call(Request(
            verb="update", op_id=uuid.uuid4().hex, epoch=ws.epoch, owner=desired.supply.owner,
            params={"id": entry["id"], "entry": {**entry, "state": "draining"},
                    "action": "drain"}))
    finally:
        transport.close()
    assert reply.ok, reply.to_json()


def drifted_world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *,
                  cloud_down: bool = True) -> Workspace:
    """The applied site after the drift of the module docstring."""
    ws = make_site(tmp_path)
    run_steps(ws, APPLIED, monkeypatch)
    with planning(ws, monkeypatch):
        drain_by_hand(ws, "cn02")
    steps = [{"report": ["drained", "cn02"]}, *DRIFTED]
    run_steps(ws, [*steps, *([{"stop_provider": "cloud"}] if cloud_down else [])], monkeypatch)
    return ws


@contextmanager
def clock(monkeypatch: pytest.MonkeyPatch, shift: float) -> Iterator[None]:
    """xce-drift's clock ``shift`` seconds from now (the providers keep real time)."""
    import time

    with monkeypatch.context() as m:
        m.setattr(drift_cli, "time", SimpleNamespace(time=lambda: time.time() + shift))
        yield


def run_drift(ws: Workspace, capsys: pytest.CaptureFixture[str],
              monkeypatch: pytest.MonkeyPatch, *args: str) -> CliRun:
    """``xce-drift <site> --workdir <tmp> ARGS``."""
    return run_cli_main(drift_cli.main, ws, capsys, monkeypatch, *args)
