"""A volume's ``retention`` (N14): the duration shorthand and the mapping compile to the volume
entry's spec, with only what is not the default besides ``retention``, so a site written with
the shorthand keeps its digest. Broken forms are in broken/retention-*."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from compiler.compile import compile_site
from compiler.core.problems import Problems

SITE = """version: 1
site:
  name: t
host_groups:
  - name: cpu
    hosts: cn[01-02]
providers:
  - name: shared-fs
    kind: directory
proxies:
  - name: proxy-a
    host: adm01
    active: [shared-fs]
volumes:
  - name: shared
    provider: shared-fs
    path: /shared
    capacity: 1TiB
    mounted_by: [cpu]
"""
WEEK, MONTH = 7 * 86400, 30 * 86400


def _volume(tmp_path: Path, retention: str | None) -> tuple[dict[str, Any], str]:
    """The volume entry's spec and the map's digest, for one spelling of ``retention``."""
    text = SITE + ("" if retention is None else f"    retention: {retention}\n")
    (tmp_path / "site.yaml").write_text(text)
    problems = Problems()
    compiled, _ = compile_site(tmp_path, problems)
    assert compiled is not None, [p.message for p in problems]
    supply = compiled.supply_map
    return dict(supply.entries["volume/shared"].spec), supply.content_digest()


def _retention_keys(spec: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in spec.items() if k.startswith("retention") or k == "orphans"}


@pytest.mark.parametrize(
    ("written", "emitted"),
    [
        (None, {}),
        ("null", {}),
        ("7d", {"retention": WEEK}),
        ("604800", {"retention": WEEK}),
        ("{keep: 7d, from: job-end, orphans: report}", {"retention": WEEK}),
        ("{keep: 7d, from: output-fetch}", {"retention": WEEK, "retention_from": "output-fetch"}),
        (
            "{keep: 7d, from: output-fetch, unfetched: 30d}",
            {"retention": WEEK, "retention_from": "output-fetch", "retention_unfetched": MONTH},
        ),
        ("{keep: 1h30m, orphans: remove}", {"retention": 5400, "orphans": "remove"}),
    ],
)
def test_each_form_is_emitted_as_the_design_says(
    tmp_path: Path, written: str | None, emitted: dict[str, Any]
) -> None:
    spec, _ = _volume(tmp_path, written)
    assert _retention_keys(spec) == emitted


def test_the_mapping_with_defaults_has_the_digest_of_the_shorthand(tmp_path: Path) -> None:
    """Spelling the defaults out changes nothing, so no existing plan goes stale."""
    _, shorthand = _volume(tmp_path, "14d")
    _, spelled = _volume(tmp_path, "{keep: 14d, from: job-end, orphans: report}")
    _, other = _volume(tmp_path, "{keep: 14d, orphans: remove}")
    assert shorthand == spelled != other
