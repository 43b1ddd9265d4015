"""Following the applied configuration: what a proxy serves (its proxied providers, active
or standby), what a new configuration adds and removes, and a proxy it does not name."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from compiler.core.problems import UserError
from reconciler.proxy import codes
from reconciler.proxy.follow import Follower
from tests.proxy.unit_kit import SITE, directory, proxy, record, sqlite


def in_process() -> dict[str, object]:
    binding = directory()
    del binding["via"]
    return binding


def test_a_proxy_serves_its_proxied_providers_active_or_standby(tmp_path: Path) -> None:
    store = sqlite(tmp_path / "state.sqlite")
    store.record_config(SITE, {
        "providers": {"a": directory(), "b": directory(), "local": in_process()},
        "proxies": {"proxy-a": {"host": "h", "active": ["a", "local"], "standby": ["b"]}},
        "proxy_settings": {"inventory_max_age": 600, "publish_interval": 30, "lease_ttl": 9}},
        {}, "test")
    follower = Follower(store, "proxy-a", None, tmp_path)
    change = follower.poll()
    assert change is not None and change.added == ("a", "b") and not change.removed
    served = follower.current
    assert served is not None and follower.site == SITE
    assert dict(served.preferred) == {"a": True, "b": False}  # "local" runs in-process
    assert (served.settings.lease_ttl, served.settings.publish_interval) == (9, 30)
    assert follower.poll() is None  # the same configuration: nothing new


def test_providers_added_are_taken_up_and_removed_ones_released(tmp_path: Path) -> None:
    store = sqlite(tmp_path / "state.sqlite")
    record(store, {"one": directory(), "two": directory()}, ["one", "two"])
    running = proxy(store, tmp_path / "adm01")
    running.daemon.step()
    assert set(running.daemon.leases.held) == {"one", "two"}
    old = store.provider_leases(SITE)
    record(store, {"two": directory(base="fs2"), "three": directory()}, ["two", "three"])
    change = running.daemon.follow()
    assert change is not None
    assert (change.added, change.removed, change.rebound) == (("three",), ("one",), ("two",))
    assert store.provider_leases(SITE)["one"].expires == 0  # released for whoever serves it
    assert "one" not in running.daemon.running and "two" not in running.daemon.running
    running.daemon.tick_leases()
    running.daemon.publish_due()
    leases = store.provider_leases(SITE)
    assert {p for p, lease in leases.items() if lease.expires} == {"two", "three"}
    assert leases["two"].epoch == old["two"].epoch  # the lease kept; the provider reopened
    assert (tmp_path / "adm01" / "fs2").is_dir()  # under its new binding
    last = {e["provider"]: e for e in running.events("published")}
    assert last["two"]["replace"] is True and last["three"]["replace"] is True
    [config] = running.events("config")[1:]
    assert (config["added"], config["removed"], config["config_seq"]) == (["three"], ["one"], 2)


def test_a_proxy_the_configuration_does_not_name_refuses_to_serve(tmp_path: Path) -> None:
    store = sqlite(tmp_path / "state.sqlite")
    record(store, {"one": directory()}, ["one"])
    with pytest.raises(UserError) as err:
        Follower(store, "proxy-z", None, tmp_path).poll()
    [problem] = err.value.problems
    assert problem.code == codes.NOT_IN_CONFIG
    assert "proxy 'proxy-z' is not in the configuration site 'hpc-test' last applied" in \
        problem.message and "proxy-a, proxy-b" in problem.message


def test_a_proxy_dropped_from_the_configuration_releases_and_stops(tmp_path: Path) -> None:
    store = sqlite(tmp_path / "state.sqlite")
    record(store, {"one": directory()}, ["one"])
    running = proxy(store, tmp_path / "adm01")
    running.daemon.step()
    bindings = store.applied_config(SITE).bindings  # type: ignore[union-attr]
    del bindings["proxies"]["proxy-a"]
    store.record_config(SITE, bindings, {}, "test")
    with pytest.raises(UserError, match="'proxy-a' is not in the configuration"):
        running.daemon.run(threading.Event())
    assert store.provider_leases(SITE)["one"].expires == 0
    assert running.events("stopped")


def test_without_an_applied_configuration_the_proxy_waits(tmp_path: Path) -> None:
    store = sqlite(tmp_path / "state.sqlite")
    running = proxy(store, tmp_path / "adm01")
    assert running.daemon.step() == 0 and running.ctx.served is None
    assert [e["event"] for e in running.events()] == ["waiting"]


def test_several_sites_need_site_to_be_named(tmp_path: Path) -> None:
    store = sqlite(tmp_path / "state.sqlite")
    record(store, {"one": directory()}, ["one"])
    record(store, {"one": directory()}, ["one"], site="other")
    with pytest.raises(UserError) as err:
        Follower(store, "proxy-a", None, tmp_path).poll()
    assert err.value.problems[0].code == codes.WHICH_SITE
    assert "hpc-test, other" in err.value.problems[0].message
    named = Follower(store, "proxy-a", "other", tmp_path)
    assert named.poll() is not None and named.site == "other"
