"""An external provider receives its binding's params as ``config`` in every request."""

from __future__ import annotations

import sys
from pathlib import Path

from reconciler.protocol import Request
from reconciler.providers.registry import open_provider

ECHO = """
import json, os, sys
req = json.loads(sys.stdin.read())
print(json.dumps({"ok": True, "result": {"config": req.get("config"), "cwd": os.getcwd()}}))
"""


def test_exec_provider_gets_config_and_runs_in_its_state_folder(tmp_path: Path) -> None:
    script = tmp_path / "echo.py"
    script.write_text(ECHO)
    binding = {"kind": "exec", "command": [sys.executable, str(script)],
               "params": {"region": "eu-1", "tags": {"team": "hpc"}}}
    reply = open_provider("cloud", binding, tmp_path / "work").call(Request("probe"))
    assert reply.ok
    assert reply.result["config"] == {"region": "eu-1", "tags": {"team": "hpc"}}
    assert Path(reply.result["cwd"]) == (tmp_path / "work" / "providers" / "cloud").resolve()


def test_a_request_without_binding_params_carries_no_config(tmp_path: Path) -> None:
    script = tmp_path / "echo.py"
    script.write_text(ECHO)
    binding = {"kind": "exec", "command": [sys.executable, str(script)]}
    reply = open_provider("cloud", binding, tmp_path).call(Request("probe"))
    assert reply.result["config"] is None
