"""``site.discovery`` compiled into the map's settings: the word as written (so a site that
writes one keeps its map byte for byte), the mapping with its defaults filled in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from compiler.compile import compile_site
from compiler.contract.supply_map import SupplyMap
from compiler.core.problems import Problems

HOSTS = """version: 1
host_groups:
  - name: cpu
    hosts: cn[01-02]
  - name: burst
    hosts: burst[01-02]
    counters: {slots: 32}
    features: [cloud]
"""


def _compile(tmp_path: Path, discovery: str) -> SupplyMap:
    site = tmp_path / "site"
    site.mkdir(parents=True)
    (site / "hosts.yaml").write_text(HOSTS)
    (site / "site.yaml").write_text(
        "version: 1\nsite:\n  name: t\n  defaults: {host: {counters: {mem: 1GiB, slots: 8}}}\n"
        f"  discovery: {discovery}\n")
    problems = Problems()
    compiled, _ = compile_site(site, problems)
    assert compiled is not None, [p.message for p in problems]
    return compiled.supply_map


def _discovery(tmp_path: Path, discovery: str) -> Any:
    return _compile(tmp_path, discovery).settings["discovery"]


def test_the_word_form_stays_the_word(tmp_path: Path) -> None:
    assert _discovery(tmp_path, "admit") == "admit"


def test_a_mapping_with_only_a_policy_is_the_word(tmp_path: Path) -> None:
    """Same meaning, same map: a site that rewrites ``admit`` as a mapping changes nothing."""
    word = _compile(tmp_path / "a", "admit")
    mapping = _compile(tmp_path / "b", "{policy: admit}")
    assert mapping.content_digest() == word.content_digest()


def test_the_mapping_gets_otherwise_and_the_groups_counters(tmp_path: Path) -> None:
    got = _discovery(tmp_path, "{policy: admit, names: ['burst*', 'cn[10-19]'], group: burst}")
    assert got == {"policy": "admit", "names": ["burst*", "cn[10-19]"], "otherwise": "report",
                   "group": "burst", "counters": {"mem": 1 << 30, "slots": 32}}


def test_the_policys_own_counters_replace_the_groups(tmp_path: Path) -> None:
    got = _discovery(tmp_path, "{policy: admit, group: burst, counters: {gpu: 1}}")
    assert got == {"policy": "admit", "group": "burst", "counters": {"gpu": 1}}


def test_names_alone_limit_a_reject(tmp_path: Path) -> None:
    got = _discovery(tmp_path, "{policy: reject, names: ['x*'], otherwise: report}")
    assert got == {"policy": "reject", "names": ["x*"], "otherwise": "report"}
