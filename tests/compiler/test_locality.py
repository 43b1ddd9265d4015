"""Dataset locality (PR-3) in the compiled map: ``attributes.datasets`` lists the copies at a
host group (``group/<g>``) on its ``host-group`` entry and a host's own (``host/<h>``) on
that host only; the others keep sharing their group's attributes."""

from __future__ import annotations

from pathlib import Path

from compiler.compile import compile_site
from compiler.contract.supply_map import SupplyMap
from compiler.core.problems import Problems

DIGEST = "sha256:" + "0" * 64

FILES = {
    "site.yaml": "version: 1\nsite:\n  name: t\n  defaults: {host: {counters: {slots: 8}}}\n",
    "hosts.yaml": """version: 1
host_groups:
  - name: gpu
    hosts: gn[01-03]
  - name: cpu
    hosts: cn[01-02]
""",
    "providers.yaml": """version: 1
providers:
  - name: controller
    kind: controller-map
  - name: gpu-cache
    kind: dataset-copy
    params: {location: group/gpu}
  - name: gn01-disk
    kind: dataset-copy
    params: {location: host/gn01}
""",
    "proxies.yaml": """version: 1
proxies:
  - name: proxy-a
    host: adm01
    active: [gpu-cache, gn01-disk]
""",
    "datasets.yaml": f"""version: 1
caches:
  - {{location: group/gpu, capacity: 1TiB, provider: gpu-cache}}
  - {{location: host/gn01, capacity: 1TiB, provider: gn01-disk}}
datasets:
  - name: weights
    version: 2
    size: 1GiB
    digest: {DIGEST}
    source: weights@2
    copies:
      - {{location: host/gn01, provider: gn01-disk}}
      - {{location: group/gpu, provider: gpu-cache}}
  - name: imagenet
    version: 3
    size: 1GiB
    digest: {DIGEST}
    source: imagenet@3
    copies:
      - {{location: group/gpu, provider: gpu-cache}}
  - name: scratch
    version: 1
    size: 1GiB
    digest: {DIGEST}
    source: scratch@1
    copies:
      - {{location: host/gn01, provider: gn01-disk}}
""",
}


def _compile(tmp_path: Path) -> SupplyMap:
    site = tmp_path / "site"
    site.mkdir()
    for name, text in FILES.items():
        (site / name).write_text(text)
    problems = Problems()
    compiled, _ = compile_site(site, problems)
    assert compiled is not None, [p.message for p in problems]
    return compiled.supply_map


def test_a_group_lists_its_copies_sorted(tmp_path: Path) -> None:
    entries = _compile(tmp_path).entries
    assert entries["host-group/gpu"].attributes["datasets"] == ["imagenet@3", "weights@2"]
    assert "datasets" not in entries["host-group/cpu"].attributes  # no copies: no attribute


def test_a_host_lists_only_its_own_copies(tmp_path: Path) -> None:
    entries = _compile(tmp_path).entries
    gn01, gn02, gn03 = (entries[f"host/gn0{i}"].attributes for i in (1, 2, 3))
    assert gn01["datasets"] == ["scratch@1", "weights@2"]  # not the group's imagenet@3
    assert gn01["group"] == "gpu" and gn01["features"] == gn02["features"]
    assert "datasets" not in gn02
    assert gn02 is gn03  # the group's attributes, shared by reference (100,000 hosts)
    assert gn01 is not gn02 and "datasets" not in entries["host/cn01"].attributes
