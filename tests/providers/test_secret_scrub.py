"""A provider that echoes a resolved secret, in its error or on its stderr, never gets it
printed or written: one redaction (``compiler.core.secrets.Redactor``) for every transport."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

import reconciler.transports.stderr as stderr_module
from compiler.core.secrets import Redactor
from reconciler.protocol import ErrorCode, ProviderError, Reply, Request, resolve_secret
from reconciler.providers.registry import BUILTINS, open_provider
from reconciler.transports import Transport
from reconciler.transports.stderr import StderrLog

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


# --- Issue 8 §4: a provider's stderr never reaches a file in clear ---------------------

TOKEN = "tok-3f9a-UNIQUE-secret"
ROGUE = Path(__file__).with_name("rogue_provider.py")


def leaky(tmp_path: Path, kind: str, secrets: dict[str, str] | None = None) -> Transport:
    command = [sys.executable, str(ROGUE), "leak", *(["--jsonl"] if kind == "jsonl" else [])]
    binding = {"kind": kind, "command": command,
               "secrets": secrets or {"token": "env:LEAKY_TOKEN"}}
    return open_provider("leaky", binding, tmp_path)


def stderr_log(tmp_path: Path) -> Path:
    return tmp_path / "providers" / "leaky" / "stderr.log"


@pytest.fixture
def token(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("LEAKY_TOKEN", TOKEN)
    return TOKEN


@pytest.mark.parametrize("kind", ["exec", "jsonl"])
def test_a_provider_printing_its_credential_on_stderr_leaves_it_out_of_the_log(
    tmp_path: Path, kind: str, token: str
) -> None:
    t = leaky(tmp_path, kind)
    assert t.call(Request("inventory")).ok
    t.close()  # jsonl: the process ends, and with it the unterminated last line
    log = stderr_log(tmp_path)
    text = log.read_text()
    assert token not in text
    assert token[: len(token) // 2] not in text  # not even the half that came first
    assert text.splitlines() == [
        "(sensitive)",
        "login with token=(sensitive) refused",
        "retrying with (sensitive) now",  # the secret arrived in two reads
        '{"config": {"token": "(sensitive)"}}',
        "last words: (sensitive)",
    ]
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


@pytest.mark.parametrize("kind", ["exec", "jsonl"])
def test_an_existing_world_readable_log_is_made_owner_only(
    tmp_path: Path, kind: str, token: str
) -> None:
    log = stderr_log(tmp_path)
    log.parent.mkdir(parents=True)
    log.write_text("an older line\n")
    log.chmod(0o644)
    t = leaky(tmp_path, kind)
    assert t.call(Request("inventory")).ok
    t.close()
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert log.read_text().startswith("an older line\n(sensitive)\n")


def test_a_link_in_place_of_the_log_is_not_followed(tmp_path: Path, token: str) -> None:
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("untouched\n")
    log = stderr_log(tmp_path)
    log.parent.mkdir(parents=True)
    log.symlink_to(elsewhere)
    reply = leaky(tmp_path, "exec").call(Request("inventory"))
    assert reply.error is not None and reply.error.code is ErrorCode.UNAVAILABLE
    assert f"cannot open its stderr log {log}" in reply.error.message
    assert elsewhere.read_text() == "untouched\n"


def test_a_secret_from_a_file_is_redacted_line_by_line(tmp_path: Path) -> None:
    """A key file of several lines: each line is a secret, wherever it shows up."""
    key = tmp_path / "key.pem"
    key.write_text("-----BEGIN KEY-----\nAAAAsecretline1\nBBBBsecretline2\n-----END KEY-----\n")
    log = StderrLog("p", tmp_path / "stderr.log", [f"file:{key}"])
    for chunk in (b"key line AAAAsec", b"retline1 and BBBBsecretline2\nclean\n"):
        log.feed(chunk)
    log.finish()
    text = (tmp_path / "stderr.log").read_text()
    assert "secretline" not in text
    assert text == "key line (sensitive) and (sensitive)\nclean\n"


def test_an_endless_line_is_dropped_whole_and_the_log_stays_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, token: str
) -> None:
    monkeypatch.setattr(stderr_module, "MAX_LINE", 1000)
    monkeypatch.setattr(stderr_module, "LOG_LIMIT", 10_000)
    path = tmp_path / "stderr.log"
    log = StderrLog("p", path, ["env:LEAKY_TOKEN"])
    log.feed(b"x" * 990 + token.encode())  # the line limit falls inside the secret
    log.feed(b"x" * 5000 + b"\nafter\n")
    for _ in range(150):
        log.feed(b"y" * 99 + b"\n")
    log.finish()
    older = path.with_name("stderr.log.1")
    assert path.stat().st_size <= 10_000 + 100 and older.stat().st_size <= 10_000 + 100
    assert stat.S_IMODE(path.stat().st_mode) == stat.S_IMODE(older.stat().st_mode) == 0o600
    text = older.read_text() + path.read_text()
    assert token[:5] not in text and "x" not in text
    assert text.count("y" * 99) == 150
    assert "[a stderr line longer than 1000 bytes was dropped]\nafter\n" in older.read_text()


def test_the_last_stderr_line_in_an_exec_error_is_redacted(tmp_path: Path,
                                                           token: str) -> None:
    script = tmp_path / "dies.py"
    script.write_text("import os, sys\nsys.stdin.read()\n"
                      "sys.stderr.write('bad token ' + os.environ['LEAKY_TOKEN'] + '\\n')\n"
                      "sys.exit(4)\n")
    binding = {"kind": "exec", "command": [sys.executable, str(script)],
               "secrets": {"token": "env:LEAKY_TOKEN"}}
    reply = open_provider("leaky", binding, tmp_path).call(Request("info"))
    assert reply.error is not None
    assert reply.error.message == ("provider 'leaky' gave no reply (exited with status 4: "
                                   "bad token (sensitive))")
    assert stderr_log(tmp_path).read_text() == "bad token (sensitive)\n"


class Echoing:
    """A built-in that puts the value of its credential into its error."""

    def __init__(self, name: str, params: object, workdir: Path) -> None:
        pass

    def handle(self, request: Request) -> Reply:
        value = resolve_secret(request.secrets["token"])
        return Reply.failure(ProviderError(ErrorCode.UNAVAILABLE, f"{value} was refused"))

    def close(self) -> None:
        pass


def test_a_builtin_provider_error_is_redacted_by_the_same_function(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, token: str
) -> None:
    monkeypatch.setitem(BUILTINS, "directory", (__name__, "Echoing"))
    t = open_provider("leaky", {"kind": "directory", "secrets": {"token": "env:LEAKY_TOKEN"}},
                      tmp_path)
    reply = t.call(Request("inventory"))
    assert reply.error is not None and reply.error.message == "(sensitive) was refused"


def test_secret_values_cover_the_forms_a_provider_prints(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ODD_TOKEN", 'p@ss "word"/x')
    monkeypatch.setenv("SHORT_TOKEN", "abc")
    redactor = Redactor.of(["env:ODD_TOKEN", "env:SHORT_TOKEN", "env:UNSET_TOKEN_X"])
    assert set(redactor.values) == {'p@ss "word"/x', 'p@ss \\"word\\"/x', "p%40ss%20%22word%22%2Fx"}
    assert redactor.text('{"t": "p@ss \\"word\\"/x"} url=p%40ss%20%22word%22%2Fx') == (
        '{"t": "(sensitive)"} url=(sensitive)')
    assert redactor.text("abc stays: too short to tell from a word").startswith("abc")
