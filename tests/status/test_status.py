"""``xce-status`` over a real store (SQLite, and PostgreSQL when XCE_TEST_PG_URL is set),
filled through the store API as applies, proxies and drift runs fill it; the times are then
pinned (as time passing would set them) and ``--as-of`` fixed, so every age is known."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from syrupy.assertion import SnapshotAssertion

from reconciler.cmds.status import main
from reconciler.state import StateStore, open_store
from reconciler.state.runs import site_runs
from reconciler.state.store import DriftSeen, RunStatus
from tests.state.conftest import pg_admin, pg_target, sqlite_target, target  # noqa: F401
from tests.state.targets import Target

SITE = "east"
T0 = 1_800_000_000.0  # 2027-01-15 08:00:00 UTC, what --as-of pins
AS_OF = "2027-01-15T08:00:00Z"
MAX_AGE = 600.0
BINDINGS: dict[str, Any] = {
    "providers": {"fs": {"kind": "fs", "via": "proxy", "proxy": "px-a"},
                  "lic": {"kind": "fs", "via": "proxy", "proxy": "px-b"}},
    "proxies": {"px-a": {"host": "node-a", "active": ["fs"]},
                "px-b": {"host": "node-b", "active": ["lic"]}},
    "proxy_settings": {"inventory_max_age": MAX_AGE, "publish_interval": 60, "lease_ttl": 15},
}
# (table, column, value, condition): the store clock's stamps, pinned before T0
PINNED = [
    ("applied_config", "applied", T0 - 3600, ""),
    ("applied", "applied", T0 - 3600, ""),
    ("runs", "started", T0 - 3700, ""),
    ("runs", "finished", T0 - 3600, ""),
    ("proxy_instances", "started", T0 - 7200, ""),
    ("proxy_instances", "seen", T0 - 5, "proxy = 'px-a'"),
    ("proxy_instances", "seen", T0 - 900, "proxy = 'px-b'"),
    ("provider_leases", "acquired", T0 - 7200, ""),
    ("provider_leases", "expires", T0 + 10, "provider = 'fs'"),
    ("provider_leases", "expires", T0 - 120, "provider = 'lic'"),  # lapsed 2 min ago
    ("published_inventories", "published", T0 - 30, "provider = 'fs'"),
    ("published_inventories", "changed", T0 - 10, "provider = 'fs'"),
    ("published_inventories", "published", T0 - 1200, "provider = 'lic'"),  # past 10 min
    ("reviewed_plans", "recorded_at", T0 - 300, ""),
]


def _fill(store: StateStore) -> None:
    """One site as an apply, two proxies, a drift run and a review leave it."""
    store.record_config(SITE, BINDINGS, {"proxies": {}}, "ci@runner-1")
    store.set_applied(SITE, "d" * 64, "rev-7")
    run_id = f"{site_runs(SITE)}run-1"
    store.start_run(run_id, "p" * 64, "ci@runner-1")
    store.finish_run(run_id, RunStatus.SUCCEEDED)
    for proxy, host, pid, provider in (("px-a", "node-a", 41, "fs"),
                                       ("px-b", "node-b", 42, "lic")):
        instance = f"{host}:{pid}:t"
        store.proxy_seen(SITE, proxy, instance, host, pid, "serving")
        lease = store.take_lease(SITE, provider, proxy, instance, 30.0, preferred=True)
        assert lease is not None
        store.publish_inventory(
            SITE, provider, instance, lease.epoch, generation=3, complete=True, session=None,
            info=None, config_seq=1, upserts=[(f"{provider}/e{i}", "{}") for i in range(4)],
            deletes=(), replace=True)
    store.enqueue_calls(SITE, "fs", [(f"op-{i}", {"verb": "create", "op_id": f"op-{i}"})
                                     for i in range(2)])
    store.record_refusal(SITE, "px-b", "lic", "supply.borrow", "default deny", "op-9")
    seen = [DriftSeen(f"f{i}", f"missing|{kind}/n{i}", {"kind": kind})
            for i, kind in enumerate(("host", "host", "instance"))]
    store.record_drift(SITE, {"missing": 3}, seen)
    store.record_plan(SITE, "a" * 64, "c" * 40, b"plan", branch="pr-12")


def _pin(store_at: Target) -> None:
    for table, column, value, where in PINNED:
        store_at.raw(f"UPDATE {table} SET {column} = ?" + (f" WHERE {where}" if where else ""),
                   (value,))


@pytest.fixture
def filled(target: Target) -> Target:  # noqa: F811
    with target.open() as store:
        _fill(store)
    _pin(target)
    return target


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_json_tells_each_part_of_the_site(filled: Target,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--state", filled.url, "--as-of", AS_OF, "--format", "json")
    assert code == 0
    doc = orjson.loads(out)
    assert doc["site"] == SITE and doc["as_of"] == "2027-01-15T08:00:00+00:00"
    assert doc["applied_config"]["seq"] == 1
    assert doc["applied_config"]["applied_by"] == "ci@runner-1"
    assert doc["last_apply"]["revision"] == "rev-7"
    assert doc["last_apply"]["last_run"]["status"] == "succeeded"
    assert [(p["proxy"], p["host"], p["pid"], p["seen_ago"]) for p in doc["proxies"]] == [
        ("px-a", "node-a", 41, 5.0), ("px-b", "node-b", 42, 900.0)]
    leases = {lease["provider"]: lease for lease in doc["leases"]}
    assert leases["fs"]["state"] == "held"
    assert leases["lic"]["state"] == "lapsed"
    assert leases["lic"]["since"] == "2027-01-15T07:58:00+00:00"
    assert leases["lic"]["epoch"] > leases["fs"]["epoch"]  # one counter per site
    inventories = {i["provider"]: i for i in doc["inventories"]}
    assert (inventories["fs"]["stale"], inventories["fs"]["behind_a_change"]) == (False, True)
    assert (inventories["lic"]["stale"], inventories["lic"]["age"]) == (True, 1200.0)
    assert inventories["lic"]["max_age"] == MAX_AGE and inventories["fs"]["entries"] == 4
    assert doc["queue"] == {"fs": 2} and doc["refusals"] == 1
    assert doc["open_drift"] == {"host": 2, "instance": 1}
    assert [p["branch"] for p in doc["plans_waiting"]] == ["pr-12"]


def test_text_view(filled: Target, capsys: pytest.CaptureFixture[str],
                   snapshot: SnapshotAssertion) -> None:
    code, out, _ = _run(capsys, "--state", filled.url, "--as-of", AS_OF)
    assert code == 0
    assert "stale: older than 10 min" in out
    assert out == snapshot


def test_markdown_names_the_stale_inventory(filled: Target,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--state", filled.url, "--as-of", AS_OF, "--format",
                        "markdown")
    assert code == 0
    assert "| lic | px-b | 3 | 4 | 20 min | stale: older than 10 min |" in out


def test_which_site_is_asked_when_the_store_holds_several(
        filled: Target, capsys: pytest.CaptureFixture[str]) -> None:
    with filled.open() as store:
        store.record_config("west", BINDINGS, {}, "ci@runner-2")
    code, out, err = _run(capsys, "--state", filled.url)
    assert (code, out) == (1, "")
    assert "XCE867" in err and "east, west" in err and "Traceback" not in err
    code, out, _ = _run(capsys, "--state", filled.url, "--site-key", "west", "--format",
                        "json")
    assert code == 0 and orjson.loads(out)["leases"] == []


def test_no_store_is_an_error_and_none_is_made(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "state.sqlite"
    code, out, err = _run(capsys, "--state", str(missing))
    assert (code, out) == (1, "")
    assert f"XCE866]: there is no state store at {missing}:" in err
    assert "Traceback" not in err
    assert not missing.exists()


def test_a_store_no_apply_recorded_a_configuration_in_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store_file = tmp_path / "state.sqlite"
    with open_store(None, store_file):  # a store made, never applied to
        pass
    code, out, err = _run(capsys, "--state", str(store_file))
    assert (code, out) == (1, "")
    assert "XCE867" in err and "holds no applied configuration yet" in err
    assert "run xce-apply" in err and "Traceback" not in err
