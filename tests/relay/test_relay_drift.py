"""xce-drift of a site with a proxied provider: the drift is read from what the proxy
published, and a provider whose proxy published nothing is unknown, never missing."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from reconciler.cmds import drift as drift_cli
from tests.apply.conftest import Site, volume
from tests.relay.conftest import PROVIDER, SITE, StandIn, proxied, write_bindings


def _drift(site: Site, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = drift_cli.main(["--desired", str(site.desired_file), "--state", site.target.url,
                           "--format", "json"])
    return code, orjson.loads(capsys.readouterr().out)


def test_drift_reads_the_published_inventory(site: Site, stand_in: StandIn,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    site.write([volume("v1"), volume("v2")])
    site.seed([volume("v1")])
    write_bindings(site, proxied(site))
    stand_in.publish()
    desired = site.desired()
    stand_in.store.record_config(SITE, desired.bindings.to_json(),
                                 dict(desired.proxy_allowlists), "tester")
    code, report = _drift(site, capsys)
    assert code == 2
    assert {f["entry"]: f["category"] for f in report["findings"]} == {"volume/v2": "missing"}


def test_drift_of_a_provider_whose_proxy_published_nothing_is_unknown(
        site: Site, stand_in: StandIn, capsys: pytest.CaptureFixture[str]) -> None:
    site.write([volume("v1"), volume("v2")])
    site.seed([volume("v1")])
    write_bindings(site, proxied(site))
    code, report = _drift(site, capsys)
    found = {f["entry"]: f["category"] for f in report["findings"]}
    assert found == {f"provider/{PROVIDER}": "unknown"}, report["findings"]
    assert code == 2  # an unknown provider is drift to look at
