"""``xce-init --example``: the full example site as a repository of its own. The example is
site-config/, which admins are invited to edit, so only what holds for any valid example is
asserted: it compiles, its snapshots were written (xce-init fails if its first pytest run
does), nothing of a workdir is copied."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scaffold.conftest import run_editable
from tests.scaffold.flow import REPO_FILES, SNAPSHOT, is_clean, ok

pytestmark = pytest.mark.slow


def test_the_example_repository_compiles_with_its_snapshots(tmp_path: Path) -> None:
    repo = tmp_path / "east"
    assert "for site hpc-east" in ok(run_editable(["xce-init", "--example", "east"], tmp_path, {}))
    for name in (*REPO_FILES, "site.yaml", "providers.yaml", "sample-data"):
        assert (repo / name).exists(), name
    assert "started as xce-gitops' full example site" in (repo / "README.md").read_text()
    hidden = {p.name for p in repo.iterdir() if p.name.startswith(".")}
    # no .xce workdir of the checkout's example; the pipeline files
    assert hidden == {".git", ".gitignore", ".github", ".pre-commit-config.yaml"}
    ok(run_editable(["xce-compile", "."], repo, {}))
    assert "# name: test_role_allowlists" in (repo / SNAPSHOT).read_text()
    assert is_clean(repo)
