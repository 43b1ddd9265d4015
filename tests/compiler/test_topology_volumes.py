"""What the scheduler reads from a compiled map (R5, N15, PR-6): each host's topology as a
map (the group's, overrides merged over it key by key), the default volume, and a volume's
capacity as the pool counter ``counter/capacity@volume/<v>``."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.compile import compile_site, located
from compiler.contract.supply_map import SupplyMap
from compiler.core.problems import Problems

SITE = """\
version: 1
site:
  name: t
  topology: [rack, switch, block]
providers:
  - name: shared-fs
    kind: directory
    params: {base: /srv}
proxies:
  - name: proxy-a
    host: adm01
    active: [shared-fs]
host_groups:
  - name: cpu
    hosts: cn[01-08]
    rack: A
    topology: {switch: leaf-a, block: b1}
    overrides:
      cn[01-02]:
        topology: {rack: A2}
      cn[02-03]:
        switch: leaf-b
  - name: login
    hosts: login01
volumes:
  - name: shared
    provider: shared-fs
    path: /shared
    capacity: 10TiB
    mounted_by: [cpu]
    default: true
  - name: scratch
    provider: shared-fs
    path: /scratch
    capacity: 2TiB
    mounted_by: [cpu]
    used_by: {queues: [long]}
"""


def compiled(tmp_path: Path, text: str = SITE) -> SupplyMap:
    (tmp_path / "site.yaml").write_text(text, encoding="utf-8")
    problems = Problems()
    result, files = compile_site(tmp_path, problems)
    assert result is not None, [p.message for p in located(problems, files)]
    return result.supply_map


@pytest.fixture(scope="module")
def supply(tmp_path_factory: pytest.TempPathFactory) -> SupplyMap:
    return compiled(tmp_path_factory.mktemp("site"))


def test_hosts_carry_the_groups_topology_as_one_map(supply: SupplyMap) -> None:
    host = supply.entries["host/cn05"].attributes
    assert host["topology"] == {"rack": "A", "switch": "leaf-a", "block": "b1"}
    assert "rack" not in host and "switch" not in host  # no top-level attributes any more
    # shared by reference, as the other group attributes are: one map per group
    assert host["topology"] is supply.entries["host/cn08"].attributes["topology"]


def test_overrides_merge_key_by_key_in_the_order_written(supply: SupplyMap) -> None:
    topo = {h: supply.entries[f"host/{h}"].attributes["topology"] for h in ("cn01", "cn02",
                                                                             "cn03")}
    assert topo["cn01"] == {"rack": "A2", "switch": "leaf-a", "block": "b1"}
    assert topo["cn02"] == {"rack": "A2", "switch": "leaf-b", "block": "b1"}  # both apply
    assert topo["cn03"] == {"rack": "A", "switch": "leaf-b", "block": "b1"}
    base = supply.entries["host/cn05"].attributes["topology"]
    assert base == {"rack": "A", "switch": "leaf-a", "block": "b1"}  # never changed in place


def test_a_host_without_topology_has_no_topology_attribute(supply: SupplyMap) -> None:
    assert "topology" not in supply.entries["host/login01"].attributes


def test_the_capacity_is_a_pool_counter_of_the_controller(supply: SupplyMap) -> None:
    counter = supply.entries["counter/capacity@volume/shared"]
    volume = supply.entries["volume/shared"]
    assert (counter.kind, counter.location, counter.amount) == ("counter", "volume/shared",
                                                                10 * 2**40)
    assert counter.amount == volume.amount
    assert counter.provider == "controller" != volume.provider
    assert counter.owner == "site/t"
    assert supply.entries["counter/capacity@volume/scratch"].amount == 2 * 2**40


def test_the_default_volume_says_so_and_only_it(supply: SupplyMap) -> None:
    assert supply.entries["volume/shared"].attributes["default"] is True
    assert "default" not in supply.entries["volume/scratch"].attributes
    assert supply.entries["volume/scratch"].attributes["used_by"] == {"queues": ["long"]}


def test_the_default_site_topology_is_rack_and_switch(tmp_path: Path) -> None:
    """Without ``site.topology`` the shorthands' keys are the site's, and only they."""
    text = SITE.replace("  topology: [rack, switch, block]\n", "")
    problems = Problems()
    (tmp_path / "site.yaml").write_text(text, encoding="utf-8")
    result, files = compile_site(tmp_path, problems)
    assert result is None
    [problem] = located(problems, files)
    assert problem.code == "XCE412" and "'block'" in problem.message
    assert "site.topology is [rack, switch]" in problem.message
    assert problem.also == ()  # nothing written to point at
    no_block = text.replace(", block: b1", "")
    supply = compiled(tmp_path, no_block)
    assert supply.entries["host/cn05"].attributes["topology"] == {"rack": "A",
                                                                  "switch": "leaf-a"}
