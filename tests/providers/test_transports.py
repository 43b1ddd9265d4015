"""Transports against real processes: missing, hanging, crashing and lying providers."""

from __future__ import annotations

import hashlib
import os
import signal
import time
from pathlib import Path

import pytest

from reconciler.protocol import ErrorCode, ProviderError, Reply, Request
from reconciler.providers.registry import BUILTINS, open_provider
from reconciler.transports import BuiltinTransport, JsonLinesTransport
from tests.helpers import call, ok
from tests.providers.kit import notes_binding


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie waiting to be reaped."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def failed(reply: Reply, code: ErrorCode) -> str:
    assert not reply.ok and reply.error is not None, reply.to_json()
    assert reply.error.code is code, reply.to_json()
    return reply.error.message


def test_exec_command_not_found_is_unavailable_and_named(tmp_path: Path) -> None:
    t = open_provider("ghost", {"kind": "exec", "command": [str(tmp_path / "nope")]}, tmp_path)
    message = failed(call(t, "inventory"), ErrorCode.UNAVAILABLE)
    assert "provider 'ghost'" in message and "command not found" in message


@pytest.mark.parametrize("kind", ["exec", "jsonl"])
def test_slow_provider_is_killed_with_its_children(tmp_path: Path, kind: str) -> None:
    binding = notes_binding(tmp_path, "sloth", kind, mode="slow", timeout=0.7)
    t = open_provider("sloth", binding, tmp_path)
    start = time.monotonic()
    message = failed(call(t, "inventory"), ErrorCode.DEADLINE_EXCEEDED)
    assert time.monotonic() - start < 5
    assert "provider 'sloth'" in message and "0.7s" in message
    pids = [int(p) for p in (tmp_path / "sloth.json.pids").read_text().split()]
    deadline = time.monotonic() + 3
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(p) for p in pids), "the provider or its child survived the timeout"
    t.close()


@pytest.mark.parametrize("kind", ["exec", "jsonl"])
def test_garbage_reply_is_internal_and_named(tmp_path: Path, kind: str) -> None:
    t = open_provider("liar", notes_binding(tmp_path, "liar", kind, mode="garbage"), tmp_path)
    message = failed(call(t, "info"), ErrorCode.INTERNAL)
    assert "provider 'liar' answered garbage" in message and "not json" in message
    t.close()


def test_exec_crash_without_reply_is_unavailable_with_stderr(tmp_path: Path) -> None:
    t = open_provider("crashy", notes_binding(tmp_path, "crashy", mode="crash-on-info"), tmp_path)
    message = failed(call(t, "info"), ErrorCode.UNAVAILABLE)
    assert "exited with status 3" in message and "crashing as asked" in message


def test_exec_provider_gets_secret_references_and_resolves_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTES_TOKEN", "s3cret-value")
    binding = {**notes_binding(tmp_path, "notes"), "secrets": {"token": "env:NOTES_TOKEN"}}
    t = open_provider("notes", binding, tmp_path)
    info = ok(t, "info")
    assert info["token_reference"] == "env:NOTES_TOKEN"  # only the reference travelled
    assert info["token_sha256"] == hashlib.sha256(b"s3cret-value").hexdigest()


def test_a_secret_value_in_a_binding_is_refused_without_echoing_it(tmp_path: Path) -> None:
    binding = {**notes_binding(tmp_path, "notes"), "secrets": {"token": "hunter2"}}
    with pytest.raises(ProviderError) as err:
        open_provider("notes", binding, tmp_path)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    assert "hunter2" not in err.value.message and "'token'" in err.value.message


def jsonl(tmp_path: Path, mode: str = "ok") -> JsonLinesTransport:
    t = open_provider("lines", notes_binding(tmp_path, "lines", "jsonl", mode), tmp_path)
    assert isinstance(t, JsonLinesTransport)
    return t


def test_jsonl_keeps_one_process_across_calls(tmp_path: Path) -> None:
    t = jsonl(tmp_path)
    pids = {ok(t, "info")["pid"] for _ in range(5)}
    assert pids == {t.pid}
    t.close()
    assert t.pid is None


def test_jsonl_restarts_after_a_crash(tmp_path: Path) -> None:
    t = jsonl(tmp_path, mode="crash-on-probe")
    first = ok(t, "info")["pid"]
    message = failed(call(t, "probe"), ErrorCode.UNAVAILABLE)
    assert "provider 'lines'" in message and "restarts on next call" in message
    assert "stderr.log" in message
    assert "crashing as asked" in (tmp_path / "providers" / "lines" / "stderr.log").read_text()
    second = ok(t, "info")["pid"]
    assert second != first and not alive(first)
    t.close()


def test_jsonl_restarts_transparently_when_killed_between_calls(tmp_path: Path) -> None:
    t = jsonl(tmp_path)
    first = ok(t, "info")["pid"]
    os.kill(first, signal.SIGKILL)
    time.sleep(0.1)
    assert ok(t, "info")["pid"] != first
    t.close()


BIG = {"entry": {"id": "note/big", "spec": {"blob": "x" * 1_000_000}}}  # > a pipe's buffer


def test_jsonl_sends_a_request_larger_than_a_pipe_buffer(tmp_path: Path) -> None:
    t = jsonl(tmp_path)
    assert ok(t, "create", op_id="big", epoch=1, params=BIG)["entry"]["id"] == "note/big"
    t.close()


def test_jsonl_provider_that_does_not_read_its_input_times_out(tmp_path: Path) -> None:
    t = open_provider("deaf", notes_binding(tmp_path, "deaf", "jsonl", "deaf", timeout=0.7),
                      tmp_path)
    assert isinstance(t, JsonLinesTransport)
    start = time.monotonic()
    message = failed(call(t, "create", op_id="big", epoch=1, params=BIG),
                     ErrorCode.DEADLINE_EXCEEDED)
    assert time.monotonic() - start < 5
    assert "provider 'deaf' did not read its request within 0.7s" in message
    assert t.pid is None  # killed; a fresh process starts on the next call
    t.close()


def test_jsonl_reply_with_the_wrong_id_is_garbage_and_restarts(tmp_path: Path) -> None:
    t = jsonl(tmp_path, mode="wrong-id")
    message = failed(call(t, "info"), ErrorCode.INTERNAL)
    assert "reply id 2 for request id 1" in message
    assert t.pid is None  # out of step: stopped, a fresh process starts on the next call
    t.close()


class Exploding:
    def handle(self, request: Request) -> Reply:
        raise KeyError("boom")

    def close(self) -> None:
        pass


def test_builtin_provider_bug_is_internal_and_named() -> None:
    message = failed(BuiltinTransport("buggy", Exploding()).call(Request("info")),
                     ErrorCode.INTERNAL)
    assert message.startswith("provider 'buggy' failed: KeyError")


class BrokenAtStart:
    def __init__(self, name: str, params: object, workdir: Path) -> None:
        raise TypeError("boom")


def test_builtin_provider_that_fails_to_start_is_internal_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(BUILTINS, "directory", (__name__, "BrokenAtStart"))
    with pytest.raises(ProviderError) as err:
        open_provider("buggy", {"kind": "directory"}, tmp_path)
    assert err.value.code is ErrorCode.INTERNAL
    assert err.value.message == "provider 'buggy' cannot start: TypeError: boom"


@pytest.mark.parametrize(
    ("binding", "fragment"),
    [
        ({"kind": "teleport"}, "unknown kind 'teleport'"),
        ({"kind": "exec"}, "needs 'command'"),
        ({"kind": "jsonl", "command": ["x"], "timeout": 0}, "positive 'timeout'"),
        ({"kind": "directory", "params": {"quota_backend": "magic"}}, "quota_backend"),
        ({"kind": "directory", "params": {"quota_backend": "command",
                                          "quota_command": ["setquota", "{"]}}, "not a template"),
        ({"kind": "dataset-copy", "params": {}}, "param location"),
    ],
)
def test_bad_bindings_are_invalid_and_named(
    tmp_path: Path, binding: dict[str, object], fragment: str
) -> None:
    with pytest.raises(ProviderError) as err:
        open_provider("p1", binding, tmp_path)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    assert err.value.message.startswith("provider 'p1'") and fragment in err.value.message
