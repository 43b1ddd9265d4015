"""A repository made by xce-init in an empty folder, on a machine where git has no user: it
is committed, and compile, plan and apply work in it with nothing else set up."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scaffold import flow
from tests.scaffold.conftest import run_editable

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("new-site") / "cluster-east"
    where.mkdir()  # an empty folder is fine
    out = flow.scaffold(run_editable, where, flow.no_git_user(where.parent / "home"))
    assert f"created the site-config repository {where} for site cluster-east" in out
    return where


def test_the_repository_is_one_commit_by_xce_init(repo: Path) -> None:
    flow.check_new_repository(repo, "xce-init <xce-init@localhost>")
    assert 'name: "cluster-east"' in (repo / "site.yaml").read_text()  # named after DIR


def test_compile_plan_and_apply_work_in_it(repo: Path) -> None:
    flow.check_compile_plan_apply(run_editable, repo)
