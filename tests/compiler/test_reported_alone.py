"""A file that fails at its top level is reported alone (docs/errors.md, "Reported alone").

The broken-corpus cases check that only the top-level error is reported; these tests show
that what was left out is real (without the broken file the references fail) and that
the one error is all there is to fix (fixed, the site compiles clean).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.compiler.test_broken_corpus import compile_here, copy_case

# case -> (the broken file, its fix as (old, new) text, the errors it would have caused)
CASES: dict[str, tuple[str, list[tuple[str, str]], dict[str, int]]] = {
    "top-key-typo-no-cascade": (
        "hosts.yaml",
        [("host_group:", "host_groups:")],
        {"XCE301": 5},  # 2 counters, the cache, the volume's 2 groups
    ),
    "missing-version-no-cascade": (
        "providers.yaml",
        [("# no version line: nothing here is read\n", "version: 1\n")],
        {"XCE301": 6},  # 3 in the proxy, the cache, the volume, the provisioned group
    ),
    "missing-version-site-no-cascade": (
        "site.yaml",
        [("site:", "version: 1\nsite:")],
        {"XCE105": 1},
    ),
    "top-key-unlike-any-no-cascade": (
        "other.yaml",
        [("machines:", "host_groups:"), ("licences:", "licenses:")],
        {"XCE301": 2},  # the volume's group, the quota's pool
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_without_the_broken_file_the_references_fail(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, _, echoes = CASES[case]
    site = copy_case(case, tmp_path)
    (site / name).unlink()
    got = Counter(p.code for p in compile_here(site, monkeypatch).problems)
    assert got == Counter(echoes)


@pytest.mark.parametrize("case", sorted(CASES))
def test_fixing_the_one_error_is_all_the_site_needs(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, fixes, _ = CASES[case]
    site = copy_case(case, tmp_path)
    path = site / name
    text = path.read_text(encoding="utf-8")
    for old, new in fixes:
        assert old in text
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")
    result = compile_here(site, monkeypatch)
    assert result.ok and [p for p in result.problems if p.severity.value == "error"] == []
