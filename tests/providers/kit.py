"""Test kit: real providers (built-in, and a Python script run over exec / JSON lines)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reconciler.providers.dataset_digest import dataset_digest
from reconciler.providers.registry import open_provider
from reconciler.transports import Transport
from tests.helpers import ok

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


@dataclass
class Subject:
    """A provider under test and a way to make distinct entries it can create."""

    name: str
    transport: Transport
    sample: Callable[[int], dict[str, Any]]


def directory_subject(tmp_path: Path) -> Subject:
    t = open_provider("shared-fs", {"kind": "directory", "params": {}}, tmp_path)
    volume = {"id": "volume/shared", "spec": {"path": "/shared", "mode": "0755"}}
    ok(t, "create", op_id="setup", owner=OWNER, params={"entry": volume})
    return Subject("shared-fs", t, lambda i: {
        "id": f"volume-dir/shared/user{i}", "spec": {"mode": "0700", "owner": "nobody"}})


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


def notes_subject(kind: str) -> Callable[[Path], Subject]:
    def make(tmp_path: Path) -> Subject:
        t = open_provider("notes", notes_binding(tmp_path, "notes", kind), tmp_path)
        return Subject("notes", t, lambda i: {"id": f"note/n{i}", "amount": i})
    return make


# The conformance suite runs against every provider listed here (one line per provider).
SUBJECTS: dict[str, Callable[[Path], Subject]] = {
    "directory": directory_subject,
    "dataset-copy": dataset_subject,
    "controller-map": controller_map_subject,
    "exec": notes_subject("exec"),
    "jsonl": notes_subject("jsonl"),
}
