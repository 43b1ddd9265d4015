"""The violation corpus: each case marks the lines where a problem must be reported.

A case folder holds ``site/`` (compiled with the real policies/) and/or its own complete
``policies/``. Every ``# expect: CODE [CODE…]`` comment says that problem must be
reported on that line, and nothing may be reported anywhere else.
"""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from tests.policy.helpers import POLICIES, compile_tree

CORPUS = Path(__file__).resolve().parent / "corpus"
EXPECT = re.compile(r"#\s*expect:\s*((?:XCE\d{3}\s*)+)")


def _expected(root: Path) -> Counter[tuple[str, int, str]]:
    found: Counter[tuple[str, int, str]] = Counter()
    for path in sorted(root.rglob("*.yaml")):
        rel = path.relative_to(root).as_posix()
        for n, line in enumerate(path.read_text().splitlines(), start=1):
            if m := EXPECT.search(line):
                found.update((rel, n, code) for code in m.group(1).split())
    return found


@pytest.mark.parametrize("case", sorted(p.name for p in CORPUS.iterdir() if p.is_dir()))
def test_corpus_case(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / case
    shutil.copytree(CORPUS / case, root)
    if not (root / "policies").exists():
        shutil.copytree(POLICIES, root / "policies")
    monkeypatch.chdir(root)  # display paths relative to the case, as a user would see them
    _, problems = compile_tree(Path("policies"), Path("site"))
    got = Counter((p.file or "", p.line or 0, p.code) for p in problems)
    expected = _expected(root)
    assert expected, "a corpus case must expect at least one problem"
    assert got == expected, "\n".join(
        f"{p.where.label() if p.where else ''} {p.code} {p.message}" for p in problems
    )
