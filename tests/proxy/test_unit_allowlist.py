"""A proxy's allowlist, deny by default: what it does not grant, for that provider, is
refused naming the opcode and the rule, recorded in the store, and never attempted."""

from __future__ import annotations

from pathlib import Path

from reconciler.protocol import ErrorCode
from reconciler.proxy.allowlist import Allowlist
from tests.proxy.unit_kit import (
    SCOPED,
    SITE,
    allowlists,
    create_volume,
    directory,
    proxy,
    record,
    sqlite,
)

SECTION = allowlists({"proxy-a": ["cloud-burst", "shared-fs"], "proxy-b": []})


def test_a_granted_opcode_passes_for_the_providers_it_is_scoped_to() -> None:
    mine = Allowlist.from_section("proxy-a", SECTION)
    assert mine.refusal("supply.update", "shared-fs") is None
    assert mine.refusal("provision.create", "cloud-burst") is None
    assert mine.refusal("host.query", "anything") is None  # not provider-scoped


def test_an_opcode_scoped_to_other_providers_is_refused_naming_them() -> None:
    rule = Allowlist.from_section("proxy-a", SECTION).refusal("supply.update", "flexlm")
    assert rule is not None
    assert "scoped" in rule and "cloud-burst, shared-fs" in rule and "'flexlm'" in rule


def test_what_is_not_granted_is_denied_by_default() -> None:
    rule = Allowlist.from_section("proxy-a", SECTION).refusal("job.submit", "shared-fs")
    assert rule == ("deny by default: the allowlist of proxy 'proxy-a' (role 'proxy') does "
                    "not grant job.submit")
    # proxy-b serves nothing: it is granted no provider-scoped opcode at all
    standby = Allowlist.from_section("proxy-b", SECTION)
    assert all(standby.refusal(op, "shared-fs") for op in SCOPED)
    # a proxy the section does not name is granted nothing
    assert Allowlist.from_section("proxy-z", SECTION).refusal("host.query", "x") is not None
    assert "no controller opcode for verb 'wipe'" in (
        Allowlist.from_section("proxy-a", SECTION).refusal(None, "shared-fs", "wipe") or "")


def test_a_refused_call_is_answered_permission_denied_recorded_and_not_made(
        tmp_path: Path) -> None:
    store = sqlite(tmp_path / "state.sqlite")
    record(store, {"shared-fs": directory()}, ["shared-fs"],
           opcodes=[op for op in SCOPED if op != "supply.update"])
    running = proxy(store, tmp_path / "adm01")
    running.daemon.step()
    store.enqueue_calls(SITE, "shared-fs", [("op-1", create_volume("shared", "op-1"))])
    assert running.daemon.step() == 1
    reply = store.call_replies(SITE, "shared-fs", ["op-1"])["op-1"]
    error = reply["error"]
    assert reply["ok"] is False and error["code"] == ErrorCode.PERMISSION_DENIED.value
    assert error["retryable"] is False
    assert "opcode supply.update is not allowed" in error["message"]
    assert "does not grant supply.update" in error["message"]
    assert not (tmp_path / "adm01" / "fs" / "shared").exists()  # nothing was attempted
    [refusal] = store.refusals(SITE)
    assert (refusal.proxy, refusal.provider, refusal.opcode, refusal.op_id) == \
        ("proxy-a", "shared-fs", "supply.update", "op-1")
    assert "deny by default" in refusal.rule
    assert [e["opcode"] for e in running.events("refusal")] == ["supply.update"]
    assert not running.events("call")


def test_a_lease_the_allowlist_refuses_is_not_taken_and_recorded_once(tmp_path: Path) -> None:
    store = sqlite(tmp_path / "state.sqlite")
    record(store, {"shared-fs": directory()}, ["shared-fs"],
           opcodes=[op for op in SCOPED if op != "lease.acquire"])
    running = proxy(store, tmp_path / "adm01")
    running.daemon.step()
    running.daemon.tick_leases()
    assert store.provider_leases(SITE) == {}
    assert [(r.opcode, r.provider) for r in store.refusals(SITE)] == \
        [("lease.acquire", "shared-fs")]
    assert store.published_header(SITE, "shared-fs") is None
