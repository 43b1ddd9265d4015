"""``site.proxies`` compiled into bindings.json (issue 24): which providers run only inside
their proxy (``via: proxy``) and the site's proxy timings (``proxy_settings``). A site that
leaves it out, or writes ``serve: none``, keeps its bindings.json byte for byte."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from compiler.cmds.compile import main
from compiler.compile import compile_site
from compiler.contract.bindings import (
    DEFAULT_INVENTORY_MAX_AGE,
    DEFAULT_LEASE_TTL,
    DEFAULT_PUBLISH_INTERVAL,
    BindingError,
    Bindings,
    ProxySettings,
)
from compiler.core import codes
from compiler.core.problems import Problems

# The example site's providers that proxy-a runs; its controller map runs in-process.
WITH_PROXY = ["cloud-burst", "cpu-cache", "flexlm", "gpu-cache", "shared-fs"]


def _site(example_site: Path, tmp_path: Path, setting: str | None) -> Path:
    """The example site, with ``setting`` (YAML lines under ``site:``) appended."""
    site = tmp_path / "site"
    shutil.copytree(example_site, site, ignore=shutil.ignore_patterns(".xce"))
    if setting is not None:
        with (site / "site.yaml").open("a", encoding="utf-8") as f:
            f.write(setting)
    return site


def _build(example_site: Path, tmp_path: Path, setting: str | None) -> dict[str, bytes]:
    site = _site(example_site, tmp_path, setting)
    out = tmp_path / "build"
    assert main([str(site), "--out", str(out)]) == 0
    return {p.name: p.read_bytes() for p in out.iterdir()}


def _bindings(outputs: dict[str, bytes]) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(outputs["bindings.json"])
    return doc


def test_serve_none_writes_the_bindings_the_site_always_had(
    example_site: Path, tmp_path: Path
) -> None:
    """Left out and written as none, the same bytes; neither key appears."""
    left_out = _build(example_site, tmp_path / "a", None)["bindings.json"]
    written = _build(example_site, tmp_path / "b",
                     "  proxies: {serve: none, lease_ttl: 30s}\n")["bindings.json"]
    assert written == left_out
    assert b'"via"' not in left_out and b"proxy_settings" not in left_out
    assert Bindings.from_json(json.loads(left_out)).proxied() == []


def test_serve_all_runs_every_provider_with_a_proxy_in_it(
    example_site: Path, tmp_path: Path
) -> None:
    doc = _bindings(_build(example_site, tmp_path, "  proxies:\n    serve: all\n"))
    assert {name for name, b in doc["providers"].items() if b.get("via") == "proxy"} == set(
        WITH_PROXY)
    assert "via" not in doc["providers"]["controller"]
    assert doc["proxy_settings"] == {"inventory_max_age": DEFAULT_INVENTORY_MAX_AGE,
                                     "publish_interval": DEFAULT_PUBLISH_INTERVAL,
                                     "lease_ttl": DEFAULT_LEASE_TTL}
    assert (DEFAULT_INVENTORY_MAX_AGE, DEFAULT_PUBLISH_INTERVAL, DEFAULT_LEASE_TTL) == (
        600, 60, 15)
    read = Bindings.from_json(doc)
    assert read.proxied() == WITH_PROXY
    assert read.binding("shared-fs").via == "proxy"
    assert read.binding("controller").via == "in-process"
    assert read.proxy_settings == ProxySettings()
    assert read.to_json() == doc


def test_a_serve_list_runs_only_those_with_the_timings_written(
    example_site: Path, tmp_path: Path
) -> None:
    doc = _bindings(_build(
        example_site, tmp_path,
        "  proxies:\n    serve: [shared-fs, cloud-burst]\n    inventory_max_age: 5m\n"
        "    publish_interval: 30s\n    lease_ttl: 1m\n"))
    read = Bindings.from_json(doc)
    assert read.proxied() == ["cloud-burst", "shared-fs"]
    assert read.binding("gpu-cache").via == "in-process"
    assert "via" not in doc["providers"]["gpu-cache"]
    assert read.proxy_settings == ProxySettings(300, 30, 60)


def test_only_the_bindings_change_when_proxies_are_turned_on(
    example_site: Path, tmp_path: Path
) -> None:
    """Where a provider runs is no part of the desired map nor of the allowlists."""
    before = _build(example_site, tmp_path / "a", None)
    after = _build(example_site, tmp_path / "b", "  proxies: {serve: all}\n")
    assert after["allowlists.json"] == before["allowlists.json"]
    assert after["bindings.json"] != before["bindings.json"]
    maps = [json.loads(o["supply-map.json"]) for o in (before, after)]
    for m in maps:
        m.pop("revision"), m.pop("dirty")
    assert maps[0] == maps[1]


def test_a_bare_inventory_bound_is_seconds_with_a_warning(
    example_site: Path, tmp_path: Path
) -> None:
    site = _site(example_site, tmp_path, "  proxies: {serve: all, inventory_max_age: 20}\n")
    problems = Problems()
    compiled, _ = compile_site(site, problems)
    assert compiled is None  # 20 s is under two default intervals of 60 s
    assert sorted(p.code for p in problems) == [codes.BARE_DURATION,
                                                codes.INVENTORY_AGE_TOO_SHORT]


@pytest.mark.parametrize(("change", "error"), [
    ({"providers": {"p": {"kind": "exec", "via": "elsewhere", "proxy": "a"}}},
     "provider 'p' has 'via' 'elsewhere'; known: in-process, proxy"),
    ({"providers": {"p": {"kind": "exec", "via": "proxy", "proxy": None}}},
     "provider 'p' runs 'via' a proxy but names no 'proxy'"),
    ({"proxy_settings": {"lease_ttl": 0}},
     "proxy_settings needs a positive 'lease_ttl' (seconds)"),
    ({"proxy_settings": {"publish_interval": "1m"}},
     "proxy_settings needs a positive 'publish_interval' (seconds)"),
    ({"proxy_settings": {"lease_tll": 15}}, "unknown 'proxy_settings' keys: lease_tll"),
    ({"proxy_settings": [600]}, "'proxy_settings' that is not an object"),
])
def test_bindings_json_is_checked_when_read(change: dict[str, Any], error: str) -> None:
    """A via or a setting the reconciler could not act on is refused when the file is read,
    before any provider is opened."""
    doc: dict[str, Any] = {"providers": {}, "proxies": {}, **change}
    with pytest.raises(BindingError) as err:
        Bindings.from_json(doc)
    assert error in str(err.value)


def test_settings_absent_from_the_file_are_the_defaults() -> None:
    read = Bindings.from_json({"providers": {"p": {"kind": "exec", "via": "proxy",
                                                   "proxy": "a"}},
                               "proxy_settings": {"lease_ttl": 4.5}})
    assert read.proxy_settings == ProxySettings(lease_ttl=4.5)
    assert read.proxied() == ["p"]
