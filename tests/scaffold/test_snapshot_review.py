"""The snapshot-tested policy review of a repository made by xce-init, end to end: real pytest
processes in it, real git diffs of its snapshot file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scaffold import flow
from tests.scaffold.conftest import run_editable

pytestmark = pytest.mark.slow

AUTHOR = {"GIT_AUTHOR_NAME": "Ada Admin", "GIT_AUTHOR_EMAIL": "ada@example.org"}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("review") / "site"
    flow.scaffold(run_editable, where, {**flow.no_git_user(where.parent / "home"), **AUTHOR},
                  "--site-name", "demo")
    return where


def test_the_author_comes_from_the_environment(repo: Path) -> None:
    flow.check_new_repository(repo, "Ada Admin <ada@example.org>")


def test_a_role_change_fails_pytest_with_its_diff_then_is_accepted(repo: Path) -> None:
    flow.check_role_change_is_reviewed(run_editable, repo)


def test_a_policies_folder_in_the_site_is_what_is_reviewed(repo: Path) -> None:
    flow.check_site_policies_folder_is_reviewed(run_editable, repo)
