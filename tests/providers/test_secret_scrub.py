"""A provider that echoes a resolved secret in its error never gets it printed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from reconciler.protocol import Request
from reconciler.providers.registry import open_provider

LEAKY = """
import json, os, sys
sys.stdin.read()
token = os.environ["LEAKY_TOKEN"]
print(json.dumps({"ok": False, "error": {"code": "UNAVAILABLE",
                  "message": f"login with {token} refused", "retryable": True}}))
"""


def test_error_messages_are_scrubbed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "leaky.py"
    script.write_text(LEAKY)
    monkeypatch.setenv("LEAKY_TOKEN", "s3cr3t-value-42")
    binding = {"kind": "exec", "command": [sys.executable, str(script)],
               "secrets": {"token": "env:LEAKY_TOKEN"}}
    transport = open_provider("leaky", binding, tmp_path)
    reply = transport.call(Request("inventory"))
    assert reply.error is not None
    assert "s3cr3t-value-42" not in reply.error.message
    assert "(sensitive)" in reply.error.message and reply.error.retryable
