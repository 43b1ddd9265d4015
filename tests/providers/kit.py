"""Test kit: real providers (built-in, and a Python script run over exec / JSON lines)."""

from __future__ import annotations

import os
import shutil
import stat
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reconciler.protocol import ErrorCode, TopologyRequirement
from reconciler.providers.dataset_digest import dataset_digest
from reconciler.providers.registry import open_provider
from reconciler.transports import Transport
from tests.helpers import call, ok

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("notes_provider.py")
OWNER = "site/test"


def inventory(t: Transport) -> dict[str, Mapping[str, Any]]:
    result = ok(t, "inventory")
    assert result["complete"] is True
    return {e["id"]: e for e in result["entries"]}


def notes_binding(
    tmp_path: Path, name: str, kind: str = "exec", mode: str = "ok", timeout: float = 10,
    state: Path | None = None,
) -> dict[str, Any]:
    """A binding for the notes provider script, copied into tmp as a site would install it."""
    script = tmp_path / "notes_provider.py"
    if not script.exists():
        shutil.copy(SCRIPT, script)
    command = [sys.executable, str(script), "--root", str(REPO), "--name", name,
               "--state", str(state or tmp_path / f"{name}.json"), "--mode", mode]
    if kind == "jsonl":
        command.append("--jsonl")
    return {"kind": kind, "command": command, "timeout": timeout}


Exercise = Callable[[Transport], None]


@dataclass
class Subject:
    """A provider under test, a way to make distinct entries it can create, and for each
    optional capability it declares, a check that it works (the suite requires one)."""

    name: str
    transport: Transport
    sample: Callable[[int], dict[str, Any]]
    optional: Mapping[str, Exercise] = field(default_factory=dict)


def write_bits(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode) & 0o222


def directory_subject(tmp_path: Path) -> Subject:
    t = open_provider("shared-fs", {"kind": "directory", "params": {}}, tmp_path)
    volume = {"id": "volume/shared", "spec": {"path": "/shared", "mode": "0755"}}
    ok(t, "create", op_id="setup", owner=OWNER, params={"entry": volume})
    # A job directory as a worker makes it: a kind only reported (and evicted), in every
    # inventory the suite checks.
    ok(t, "create", op_id="setup-jobs", owner=OWNER,
       params={"entry": {"id": "volume-dir/shared/worker"}})
    (tmp_path / "fs" / "shared" / "worker" / "4711" / "out").mkdir(parents=True)

    def sample(i: int) -> dict[str, Any]:
        return {"id": f"volume-dir/shared/user{i}", "spec": {"mode": "0700", "owner": "nobody"}}

    def publish(t: Transport) -> None:
        """A read-only publish takes every write bit, its unpublish gives them back."""
        ok(t, "create", op_id="p0", epoch=1, owner=OWNER, params={"entry": sample(7)})
        data = tmp_path / "fs" / "shared" / "user7" / "out.txt"
        data.write_text("results\n")
        os.chmod(data, 0o664)
        where = {"id": sample(7)["id"], "location": "group/gpu"}
        done = ok(t, "publish", op_id="p1", epoch=1, owner=OWNER,
                  params={**where, "access": "read-only"})
        assert done["context"] == {"path": "/shared/user7", "readonly": True}
        assert (write_bits(data), write_bits(data.parent)) == (0, 0)
        assert inventory(t)[sample(7)["id"]]["spec"]["published"] == [
            {"location": "group/gpu", "access": "read-only"}]
        ok(t, "unpublish", op_id="p2", epoch=1, owner=OWNER, params=where)
        assert (write_bits(data), write_bits(data.parent)) == (0o220, 0o200)
        assert "published" not in inventory(t)[sample(7)["id"]]["spec"]

    def expand(t: Transport) -> None:
        """A quota grows to the size asked for, and never shrinks."""
        quota = "quota/shared/user/user8"
        ok(t, "create", op_id="x0", epoch=1, owner=OWNER,
           params={"entry": {"id": quota, "amount": 1000}})
        grown = ok(t, "expand", op_id="x1", epoch=1, owner=OWNER,
                   params={"id": quota, "required_bytes": 4096})
        assert (grown["capacity_bytes"], grown["expanded"]) == (4096, True)
        kept = ok(t, "expand", op_id="x2", epoch=1, owner=OWNER,
                  params={"id": quota, "required_bytes": 10})
        assert (kept["capacity_bytes"], kept["expanded"]) == (4096, False)
        assert inventory(t)[quota]["amount"] == 4096

    return Subject("shared-fs", t, sample, {"publish": publish, "expand": expand})


def dataset_subject(tmp_path: Path) -> Subject:
    src = tmp_path / "src"
    for i in range(4):
        (src / f"ds{i}" / "sub").mkdir(parents=True)
        (src / f"ds{i}" / "a.txt").write_text(f"dataset {i}\n")
        (src / f"ds{i}" / "sub" / "b.bin").write_bytes(bytes(range(256)) * (i + 1))
    binding = {"kind": "dataset-copy",
               "params": {"location": "group/gpu", "source_base": str(src)}}
    t = open_provider("cache-gpu", binding, tmp_path)
    return Subject("cache-gpu", t, lambda i: {
        "id": f"dataset-copy/ds{i}@1@group/gpu",
        "spec": {"dataset": f"ds{i}@1", "source": f"ds{i}",
                 "digest": dataset_digest(src / f"ds{i}")}})


def controller_map_subject(tmp_path: Path) -> Subject:
    t = open_provider("controller", {"kind": "controller-map", "params": {}}, tmp_path)
    return Subject("controller", t, lambda i: {
        "id": f"license/lic{i}@site", "kind": "license", "location": "site", "amount": 10 + i})


def notes_topology(t: Transport) -> None:
    """A note is made where the request's topology allows and prefers, and reported there."""
    wish = TopologyRequirement(requisite=({"switch": "s1"},), preferred=({"rack": "r2"},))
    ok(t, "create", op_id="t1", epoch=1, owner=OWNER, topology=wish,
       params={"entry": {"id": "note/placed"}})
    placed = inventory(t)["note/placed"]
    assert placed["attributes"] == {"topology": {"rack": "r2", "switch": "s1"}}
    nowhere = TopologyRequirement(requisite=({"rack": "r9"},))
    reply = call(t, "create", op_id="t2", epoch=1, owner=OWNER, topology=nowhere,
                 params={"entry": {"id": "note/nowhere"}})
    assert reply.error is not None and reply.error.code is ErrorCode.RESOURCE_EXHAUSTED
    assert "note/nowhere" not in inventory(t)


def notes_subject(kind: str) -> Callable[[Path], Subject]:
    def make(tmp_path: Path) -> Subject:
        t = open_provider("notes", notes_binding(tmp_path, "notes", kind), tmp_path)
        return Subject("notes", t, lambda i: {"id": f"note/n{i}", "amount": i},
                       {"topology": notes_topology})
    return make


def sim_subject(tmp_path: Path) -> Subject:
    """The cloud simulator (``python3 -m reconciler.testdoubles.sim_provider``), the test
    double the example site binds."""
    command = [sys.executable, "-m", "reconciler.testdoubles.sim_provider", "cloud"]
    t = open_provider("sim-cloud", {"kind": "exec", "command": command, "timeout": 30}, tmp_path)
    return Subject("sim-cloud", t, lambda i: {"id": f"instance/i{i}", "kind": "instance",
                                              "source": "provisioned"})


# The conformance suite runs against every provider listed here (one line per provider).
SUBJECTS: dict[str, Callable[[Path], Subject]] = {
    "directory": directory_subject,
    "dataset-copy": dataset_subject,
    "controller-map": controller_map_subject,
    "exec": notes_subject("exec"),
    "jsonl": notes_subject("jsonl"),
    "sim": sim_subject,
}
