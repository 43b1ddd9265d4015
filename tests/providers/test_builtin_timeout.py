"""Issue 8 §8: a built-in provider call past its binding's timeout is abandoned and reported.

Built-in providers run in-process; one stuck in the kernel (a hung filesystem, a FIFO
that blocks ``open``) used to stall the plan or the apply for ever, the apply renewing
its lease all the while. Now the caller waits at most the binding's ``timeout`` and gets
``DEADLINE_EXCEEDED``, as from an external provider; the stuck call is left to finish in
the background. The providers here really block, in a FIFO's ``open``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from compiler.contract.supply_map import Entry
from reconciler.apply import FreshPlan
from reconciler.apply.report import Status
from reconciler.live import gather_live
from reconciler.protocol import ErrorCode, Request
from reconciler.providers.registry import BUILTINS, open_provider
from reconciler.transports import BuiltinTransport
from reconciler.transports.builtin import MAX_ABANDONED
from tests.apply.conftest import OWNER, Site
from tests.providers.blocking_provider import Gate, Hanging, gate_for
from tests.providers.test_transports import failed
from tests.state.targets import Target

TIMEOUT = 0.5


@pytest.fixture
def gate(tmp_path: Path) -> Iterator[Gate]:
    made = Gate(tmp_path / "gate")
    try:
        yield made
    finally:
        made.release()  # no thread of this test stays blocked


@pytest.fixture
def hanging_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(BUILTINS, "directory",
                        ("tests.providers.blocking_provider", "HangingDirectory"))


def until(condition: Callable[[], bool], seconds: float = 5.0) -> bool:
    """Whether ``condition`` holds within ``seconds`` (a background call finishing)."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return condition()


def test_a_hung_call_is_abandoned_at_the_timeout_and_named(gate: Gate) -> None:
    provider = Hanging(gate)
    t = BuiltinTransport("stuck", provider, timeout=TIMEOUT)
    start = time.monotonic()
    reply = t.call(Request("inventory"))
    assert TIMEOUT <= time.monotonic() - start < TIMEOUT + 2
    message = failed(reply, ErrorCode.DEADLINE_EXCEEDED)
    assert message == ("provider 'stuck' did not answer within 0.5s (abandoned: it may still "
                       "finish in the background)")
    assert reply.error is not None and reply.error.retryable
    gate.release()
    assert until(lambda: provider.calls == ["inventory"])  # it did finish, later
    assert t.call(Request("inventory")).ok  # and the provider answers again


def test_a_retry_of_an_abandoned_op_waits_for_it_and_it_runs_once(gate: Gate) -> None:
    provider = Hanging(gate)
    t = BuiltinTransport("stuck", provider, timeout=TIMEOUT)
    create = Request("create", op_id="op-1", epoch=1, params={"entry": {"id": "note/a"}})
    failed(t.call(create), ErrorCode.DEADLINE_EXCEEDED)
    failed(t.call(create), ErrorCode.DEADLINE_EXCEEDED)  # still running: not started again
    threading.Timer(0.2, gate.release).start()
    reply = t.call(create)  # the retry gets the outcome of the call it waited for
    assert reply.ok and reply.result == {"done": "op-1"}
    assert provider.calls == ["op-1"]


def test_too_many_hung_calls_make_others_fail_at_once(gate: Gate) -> None:
    provider = Hanging(gate)
    t = BuiltinTransport("stuck", provider, timeout=0.2)
    for i in range(MAX_ABANDONED):
        failed(t.call(Request("create", op_id=f"op-{i}")), ErrorCode.DEADLINE_EXCEEDED)
    start = time.monotonic()
    message = failed(t.call(Request("create", op_id="op-new")), ErrorCode.UNAVAILABLE)
    assert time.monotonic() - start < 0.1
    assert message == (f"provider 'stuck' has {MAX_ABANDONED} calls still running past its "
                       "0.2s timeout; not starting another until they return")
    # A retry of an op that may be running is not "not started": its outcome stays unknown.
    failed(t.call(Request("create", op_id="op-0")), ErrorCode.DEADLINE_EXCEEDED)
    gate.release()
    assert until(lambda: len(provider.calls) == MAX_ABANDONED)
    assert t.call(Request("create", op_id="op-new")).ok
    assert sorted(provider.calls) == [*(f"op-{i}" for i in range(MAX_ABANDONED)), "op-new"]


def test_close_leaves_the_provider_open_until_its_abandoned_call_returns(gate: Gate) -> None:
    provider = Hanging(gate)
    t = BuiltinTransport("stuck", provider, timeout=0.2)
    failed(t.call(Request("inventory")), ErrorCode.DEADLINE_EXCEEDED)
    t.close()
    assert not provider.closed.is_set()  # the stuck call still uses its state
    gate.release()
    assert provider.closed.wait(5)


def test_calls_that_return_in_time_are_unchanged_and_reuse_threads() -> None:
    provider = Hanging()
    t = BuiltinTransport("quick", provider, timeout=TIMEOUT)
    before = threading.active_count()
    for i in range(50):
        assert t.call(Request("info", op_id=f"i{i}")).ok
    assert threading.active_count() <= before + 1
    t.close()
    assert provider.closed.is_set()


def test_the_bindings_timeout_bounds_a_builtin_and_is_validated(
    tmp_path: Path, hanging_directory: None
) -> None:
    gate = gate_for(tmp_path, "inventory")
    try:
        t = open_provider("shared-fs", {"kind": "directory", "timeout": TIMEOUT}, tmp_path)
        message = failed(t.call(Request("inventory")), ErrorCode.DEADLINE_EXCEEDED)
        assert message.startswith("provider 'shared-fs' did not answer within 0.5s")
    finally:
        gate.release()
    with pytest.raises(Exception, match="provider 'x' needs a positive 'timeout'"):
        open_provider("x", {"kind": "directory", "timeout": 0}, tmp_path)


def test_a_hung_builtin_is_unknown_in_the_live_map_and_the_others_answer(
    tmp_path: Path, hanging_directory: None
) -> None:
    gate = gate_for(tmp_path, "inventory")  # every HangingDirectory of this workdir waits
    hanging = {"kind": "directory", "timeout": TIMEOUT}
    calm = {"kind": "controller-map", "timeout": TIMEOUT}
    try:
        start = time.monotonic()
        result = gather_live({"providers": {"stuck": hanging, "controller": calm}}, tmp_path,
                             OWNER)
        assert time.monotonic() - start < TIMEOUT + 3
    finally:
        gate.release()
    assert list(result.live.unknown) == ["stuck"]
    assert result.live.unknown["stuck"].startswith(
        "DEADLINE_EXCEEDED: provider 'stuck' did not answer within 0.5s")
    assert [(p.code, p.subject) for p in result.problems] == [("XCE702", "stuck")]
    assert "controller" in result.live.generations


def _fs_site(site: Site) -> list[Entry]:
    entries = [
        Entry("volume/v1", "volume", "available", "config", "fs", amount=1 << 30,
              spec={"path": "/shared/v1"}, owner=OWNER),
        Entry("volume-dir/v1/u01", "volume-dir", "available", "config", "fs",
              spec={"mode": "0700", "owner": "u01"}, owner=OWNER),
    ]
    site.write(entries, providers={"fs": {"kind": "directory", "timeout": TIMEOUT}})
    return entries


def test_an_apply_whose_builtin_call_hangs_ends_and_frees_the_lock(
    tmp_path: Path, hanging_directory: None
) -> None:
    site = Site(tmp_path, Target("sqlite", str(tmp_path / "state.db")))
    _fs_site(site)
    gate = gate_for(site.workdir, "volume-dir/v1/u01")
    try:
        start = time.monotonic()
        report = site.apply(FreshPlan())
        assert time.monotonic() - start < 20
        outcome = {o.action.entry: o for o in report.outcomes}
        assert outcome["volume/v1"].status is Status.DONE
        stuck = outcome["volume-dir/v1/u01"]
        assert stuck.status is Status.FAILED and stuck.error == "DEADLINE_EXCEEDED"
        assert "provider 'fs' did not answer within 0.5s (abandoned" in stuck.message
        with site.store() as store:  # the apply gave its lock back while the call hangs
            assert store.list_locks() == []
    finally:
        gate.release()
    user_dir = site.workdir / "fs" / "shared" / "v1" / "u01"
    assert until(user_dir.is_dir)  # the abandoned create did finish in the background
    final = site.apply(FreshPlan())
    assert final.result == "applied" and all(o.ok for o in final.outcomes)
    assert not site.plan().actions  # nothing left to do, nothing done twice
