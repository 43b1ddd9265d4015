"""A site's records are kept under one key (``SupplyMap.site_key``): the apply writes the
applied configuration under it, and every reader asks for it under the same key, also for a
map that names an owner tag but no site (issue 22: readers asked under the bare site)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from reconciler.apply import FreshPlan
from reconciler.state import StateStore
from tests.apply.conftest import OWNER, Site, volume_site


def test_a_map_without_a_site_is_applied_and_read_under_its_owner(
        site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    site.write(volume_site(volumes=1, users=1))
    doc = orjson.loads(site.desired_file.read_bytes())
    site.desired_file.write_bytes(orjson.dumps({**doc, "site": ""}))
    assert site.desired().supply.site_key == OWNER
    asked: list[tuple[str, bool]] = []
    with site.store() as opened:
        kind = type(opened)  # the implementation the apply opens
    read = kind.get_applied

    def spy(store: StateStore, key: str) -> Any:
        found = read(store, key)
        asked.append((key, found is not None))
        return found

    monkeypatch.setattr(kind, "get_applied", spy)
    first = site.apply(FreshPlan())
    assert first.exit_code == 0
    with site.store() as store:
        assert store.get_applied(OWNER) is not None
    asked.clear()
    site.apply(FreshPlan())
    assert asked and all(key == OWNER for key, _ in asked), asked
    assert asked[0][1]  # the second apply knows the site was applied before
