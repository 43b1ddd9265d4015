"""Issue 8 §8: a provider's reply is bounded by its binding's ``max_reply_bytes``.

An ``exec`` provider whose inventory wrote without end grew ``xce-plan`` by about 1.9 GB/s
until its timeout. Now every transport stops reading at the cap, kills the provider and
fails the call naming the cap and how to raise it; in the live map its entries are
unknown. The provider here is a real process that writes for ever.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

import reconciler.transports.stderr as stderr_module
from compiler.model.providers import Provider
from reconciler.live import gather_live
from reconciler.protocol import ErrorCode, Reply, Request
from reconciler.providers.registry import open_provider
from reconciler.transports import BuiltinTransport, JsonLinesTransport
from reconciler.transports.base import DEFAULT_MAX_REPLY_BYTES
from tests.providers.test_transports import alive, failed

ROGUE = Path(__file__).with_name("rogue_provider.py")
REPO = Path(__file__).resolve().parents[2]
MiB = 2**20


def rogue(kind: str, mode: str, *, size: int = 0, **binding: Any) -> dict[str, Any]:
    command = [sys.executable, str(ROGUE), mode, "--size", str(size)]
    return {"kind": kind, "command": command + (["--jsonl"] if kind == "jsonl" else []),
            "timeout": 30, **binding}


def test_the_default_cap_is_the_languages() -> None:
    """bindings.json carries the compiled default; a binding without one gets the same."""
    assert Provider.model_fields["max_reply_bytes"].default == DEFAULT_MAX_REPLY_BYTES


@pytest.mark.parametrize("kind", ["exec", "jsonl"])
def test_a_reply_without_end_is_cut_at_the_cap_and_the_provider_killed(
    tmp_path: Path, kind: str
) -> None:
    t = open_provider("flood", rogue(kind, "flood", max_reply_bytes=MiB), tmp_path)
    start = time.monotonic()
    message = failed(t.call(Request("inventory")), ErrorCode.INTERNAL)
    assert time.monotonic() - start < 10  # the binding's timeout is 30 s
    assert message == (
        "provider 'flood' wrote a reply larger than its limit of 1MiB (killed"
        + ("; restarts on next call" if kind == "jsonl" else "")
        + "); if the reply is meant to be that large, raise the provider's max_reply_bytes "
        "in site-config")
    if isinstance(t, JsonLinesTransport):
        assert t.pid is None  # stopped; the next call starts a fresh process
    t.close()


@pytest.mark.parametrize("kind", ["exec", "jsonl"])
def test_reading_up_to_a_large_cap_takes_linear_time(tmp_path: Path, kind: str) -> None:
    """A line's end is searched for in new bytes only: 64 MiB in 1,024 reads is not 1,024
    scans of everything read so far."""
    t = open_provider("flood", rogue(kind, "flood", max_reply_bytes=64 * MiB), tmp_path)
    start = time.monotonic()
    assert "64MiB" in failed(t.call(Request("inventory")), ErrorCode.INTERNAL)
    assert time.monotonic() - start < 3  # about 0.2 s; rescanning took 5 s here
    t.close()


def test_the_killed_exec_provider_and_its_children_are_gone(tmp_path: Path) -> None:
    script = tmp_path / "flood.sh"  # a shell whose child does the flooding
    script.write_text(f"#!/bin/sh\n{sys.executable} {ROGUE} flood <&0 &\n"
                      f"echo $$ $! > {tmp_path}/pids\nwait\n")
    script.chmod(0o755)
    t = open_provider("flood", {"kind": "exec", "command": [str(script)],
                                "max_reply_bytes": MiB}, tmp_path)
    failed(t.call(Request("inventory")), ErrorCode.INTERNAL)
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    deadline = time.monotonic() + 3
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(p) for p in pids)


@pytest.mark.parametrize("kind", ["exec", "jsonl"])
def test_a_reply_of_exactly_the_cap_passes_one_byte_more_does_not(
    tmp_path: Path, kind: str
) -> None:
    cap = 64 * 1024 + 7  # not a multiple of a read
    fits = open_provider("fits", rogue(kind, "sized", size=cap, max_reply_bytes=cap), tmp_path)
    reply = fits.call(Request("inventory"))
    assert reply.ok, reply.to_json()
    assert len(reply.result["pad"]) > 60_000
    over = open_provider("over", rogue(kind, "sized", size=cap + 1, max_reply_bytes=cap),
                         tmp_path)
    assert "larger than its limit of 64.0KiB" in failed(over.call(Request("inventory")),
                                                        ErrorCode.INTERNAL)
    fits.close()
    over.close()


def test_jsonl_restarts_after_an_oversized_reply_and_answers_again(tmp_path: Path) -> None:
    t = open_provider("lines", rogue("jsonl", "sized", size=4096, max_reply_bytes=2048),
                      tmp_path)
    assert isinstance(t, JsonLinesTransport)
    failed(t.call(Request("inventory")), ErrorCode.INTERNAL)
    assert t.pid is None
    t.max_reply_bytes = 8192  # the binding raised: the same provider now answers
    assert t.call(Request("inventory")).ok
    t.close()


@pytest.mark.parametrize("kind", ["exec", "jsonl"])
def test_endless_stderr_fills_neither_memory_nor_the_disk(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """stderr is not part of the reply: 40 MiB of it pass, into a log that stays bounded."""
    monkeypatch.setattr(stderr_module, "LOG_LIMIT", 4 * MiB)
    t = open_provider("chatty", rogue(kind, "chatter", size=40 * MiB), tmp_path)
    assert t.call(Request("inventory")).ok
    t.close()
    log = tmp_path / "providers" / "chatty" / "stderr.log"
    older = log.with_name("stderr.log.1")
    assert 0 < log.stat().st_size <= 4 * MiB + 1024
    assert 4 * MiB < older.stat().st_size <= 4 * MiB + 1024


class Hoarder:
    """A built-in whose inventory is bigger than its binding allows."""

    def handle(self, request: Request) -> Reply:
        return Reply.success({"entries": ["x" * 1000] * 100})

    def close(self) -> None:
        pass


def test_a_builtin_reply_is_held_to_the_cap_too() -> None:
    assert BuiltinTransport("big", Hoarder(), max_reply_bytes=200_000).call(
        Request("inventory")).ok
    message = failed(BuiltinTransport("big", Hoarder(), max_reply_bytes=50_000).call(
        Request("inventory")), ErrorCode.INTERNAL)
    assert message.startswith("provider 'big' wrote a reply larger than its limit of 48.8KiB "
                              "(refused)")


def test_a_flooding_provider_is_unknown_in_the_live_map_and_others_are_not(
    tmp_path: Path
) -> None:
    bindings = {"providers": {"flood": rogue("exec", "flood", max_reply_bytes=MiB),
                              "calm": rogue("exec", "sized", size=100)}}
    result = gather_live(bindings, tmp_path, "site/test")
    assert set(result.live.unknown) == {"flood"}
    assert "max_reply_bytes" in result.live.unknown["flood"]
    assert [(p.code, p.subject) for p in result.problems] == [("XCE703", "flood")]


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "1MiB"])
def test_a_bad_cap_in_a_binding_is_refused_and_named(tmp_path: Path, value: object) -> None:
    with pytest.raises(Exception) as err:
        open_provider("p1", {"kind": "exec", "command": ["x"], "max_reply_bytes": value},
                      tmp_path)
    assert "provider 'p1' needs a positive 'max_reply_bytes'" in str(err.value)


SITE = {
    "site.yaml": "version: 1\nsite: {name: flood}\n",
    "proxies.yaml": "version: 1\nproxies:\n  - {name: px, host: localhost, active: [flood]}\n",
    "volumes.yaml": "version: 1\nvolumes:\n"
                    "  - {name: scratch, provider: flood, path: /scratch, capacity: 1TiB}\n",
}


def _peak_rss(proc: subprocess.Popen[bytes]) -> int:
    """The child's high-water RSS in bytes, from ``/proc/PID/status`` while it runs.

    Not ``wait4``'s ``ru_maxrss``: Linux carries the parent's RSS into it across the
    fork and exec, so a child of a large test process looks as large as its parent."""
    peak = 0
    while proc.poll() is None:
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text()
        except OSError:
            break
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                peak = max(peak, int(line.split()[1]) * 1024)
        time.sleep(0.02)
    return peak


def _plan_in_a_child(tmp_path: Path, cap: str | None) -> tuple[int, float, int, str, Any]:
    """xce-plan on a site whose only external provider floods: exit code, seconds, peak
    RSS in bytes, stderr, the JSON plan."""
    site = tmp_path / "site"
    site.mkdir()
    for name, text in SITE.items():
        (site / name).write_text(text)
    limit = f"\n    max_reply_bytes: {cap}" if cap else ""
    (site / "providers.yaml").write_text(
        "version: 1\nproviders:\n  - name: flood\n    kind: exec\n"
        f"    command: [{sys.executable}, {ROGUE}, flood]\n    timeout: 60s{limit}\n")
    start = time.monotonic()
    with (tmp_path / "out.json").open("wb") as out, (tmp_path / "err.txt").open("wb") as err:
        proc = subprocess.Popen([str(Path(sys.executable).with_name("xce-plan")), str(site),
                                 "--format", "json"], stdout=out, stderr=err, cwd=REPO)
        peak = _peak_rss(proc)
        proc.wait(60)
    seconds = time.monotonic() - start
    plan = orjson.loads((tmp_path / "out.json").read_bytes())
    return proc.returncode, seconds, peak, (tmp_path / "err.txt").read_text(), plan


def _assert_unknown(plan: Any, err: str, cap: str) -> None:
    # the volume is unknown, never created; its capacity counter is the controller map's
    assert [a["entry"] for a in plan["actions"]] == ["counter/capacity@volume/scratch"]
    [unknown] = plan["unknown"]
    assert unknown["entry"] == "volume/scratch"
    assert f"larger than its limit of {cap}" in unknown["reason"]
    assert "XCE703" in err and "raise the provider's max_reply_bytes in site-config" in err
    assert "Traceback" not in err


def test_xce_plan_against_a_flooding_provider_ends_soon_in_bounded_memory(
    tmp_path: Path
) -> None:
    code, seconds, peak, err, plan = _plan_in_a_child(tmp_path, "8MiB")
    assert code == 1, err
    assert seconds < 20, "the flood ran until the 60 s timeout"
    assert 20 * MiB < peak < 200 * MiB, f"xce-plan grew to {peak / MiB:.0f} MiB"  # ~60 MiB
    _assert_unknown(plan, err, "8MiB")


@pytest.mark.slow
def test_the_default_cap_bounds_xce_plan_without_any_setting(tmp_path: Path) -> None:
    code, seconds, peak, err, plan = _plan_in_a_child(tmp_path, None)
    assert code == 1, err
    assert seconds < 30
    assert DEFAULT_MAX_REPLY_BYTES < peak < DEFAULT_MAX_REPLY_BYTES + 250 * MiB, (
        f"xce-plan grew to {peak / MiB:.0f} MiB")  # ~310 MiB: the buffer and Python
    _assert_unknown(plan, err, "256MiB")

