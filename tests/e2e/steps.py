"""The setup vocabulary of ``setup.yaml`` (the table is in tests/e2e/README.md): each step
changes the live world, or the site, through the parts production uses — providers, the
reporter CLI, the filesystem — so the plan under test sees a state reached for real.
"""

from __future__ import annotations

import shutil
import sqlite3
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from reconciler.cmds import map as map_cli
from reconciler.pipeline import compile_desired
from reconciler.providers.controller_map.provider import map_path
from tests.e2e.driver import apply_plan, create_as
from tests.e2e.workspace import Workspace, fill_tokens, planning

Step = Callable[[Workspace, Any], None]


def _under(ws: Workspace, rel: str) -> Path:
    path = ws.workdir / rel
    assert ws.workdir in path.parents, f"{rel} must stay under the workdir"
    return path


def apply_site(ws: Workspace, arg: Any) -> None:
    assert arg is True, "apply_site takes no options"
    apply_plan(ws)


def report(ws: Workspace, arg: Any) -> None:
    event, hosts, *offset = arg
    argv = ["--site", str(ws.site), "--workdir", str(ws.workdir), "report", event, hosts]
    if offset:
        at = datetime.fromtimestamp(time.time() + float(offset[0]), UTC)
        argv += ["--at", at.isoformat()]
    assert map_cli.main(argv) == 0, f"xce-map report {event} {hosts} was refused"


def edit_site(ws: Workspace, arg: Any) -> None:
    path = ws.site / arg["file"]
    old, new = arg["replace"]
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} must occur once in {arg['file']}"
    path.write_text(text.replace(old, fill_tokens(new)))


def corrupt_copy(ws: Workspace, arg: Any) -> None:
    path = _under(ws, arg)
    path.chmod(0o644)  # staged files are read-only
    with path.open("ab") as fh:
        fh.write(b"!")


def mkdir_foreign(ws: Workspace, arg: Any) -> None:
    _under(ws, arg).mkdir(parents=True)


def plant_symlink(ws: Workspace, arg: Any) -> None:
    link, target = _under(ws, arg["link"]), _under(ws, arg["to"])
    if link.exists():
        link.rename(target)
    link.symlink_to(target)


def remove_tree(ws: Workspace, arg: Any) -> None:
    shutil.rmtree(_under(ws, arg))


def wipe_map(ws: Workspace, arg: Any) -> None:
    binding = compile_desired(ws.site).bindings.binding(arg)
    db = sqlite3.connect(map_path(arg, binding.params, ws.workdir))
    try:
        with db:
            db.execute("DELETE FROM entries")
            db.execute("UPDATE meta SET value = value + 1 WHERE key = 'generation'")
    finally:
        db.close()


def corrupt_map(ws: Workspace, arg: Any) -> None:
    """Overwrite the first 16 bytes of a controller map (its SQLite header): a disk fault."""
    binding = compile_desired(ws.site).bindings.binding(arg)
    with map_path(arg, binding.params, ws.workdir).open("r+b") as fh:
        fh.write(b"\0" * 16)


def foreign_entry(ws: Workspace, arg: Any) -> None:
    create_as(ws, arg["provider"], arg["owner"], dict(arg["entry"]))


def stop_provider(ws: Workspace, arg: Any) -> None:
    command = list(compile_desired(ws.site).bindings.binding(arg).command or ())
    simulator = ["-m", "reconciler.testdoubles.sim_provider"]
    assert command[1:3] == simulator, "only the simulator can stop"
    ws.env["XCE_SIM_FAIL"] = "inventory"


def clock(ws: Workspace, arg: Any) -> None:
    ws.clock += float(arg)


def env(ws: Workspace, arg: Any) -> None:
    ws.env.update({str(k): str(v) for k, v in arg.items()})


STEPS: dict[str, Step] = {
    "apply_site": apply_site,
    "report": report,
    "edit_site": edit_site,
    "corrupt_copy": corrupt_copy,
    "mkdir_foreign": mkdir_foreign,
    "plant_symlink": plant_symlink,
    "remove_tree": remove_tree,
    "wipe_map": wipe_map,
    "corrupt_map": corrupt_map,
    "foreign_entry": foreign_entry,
    "stop_provider": stop_provider,
    "clock": clock,
    "env": env,
}


def run_steps(ws: Workspace, steps: list[Mapping[str, Any]],
              monkeypatch: pytest.MonkeyPatch) -> None:
    """Each step is a one-key mapping ``{name: argument}``, run in order."""
    for i, step in enumerate(steps):
        assert len(step) == 1, f"step #{i} must have exactly one key: {step}"
        ((name, arg),) = step.items()
        assert name in STEPS, f"step #{i}: unknown step {name!r}; known: {', '.join(STEPS)}"
        with planning(ws, monkeypatch):
            STEPS[name](ws, arg)
