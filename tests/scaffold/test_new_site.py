"""A repository made by xce-init in an empty folder, on a machine where git has no user: it
is committed, and compile, plan and apply work in it with nothing else set up."""

from __future__ import annotations

from pathlib import Path

import git
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


def test_its_pipeline_files_pin_this_install(repo: Path) -> None:
    flow.check_pipeline_files(run_editable, repo)


@pytest.mark.parametrize(
    ("ci", "hidden"),
    [("gitlab", {".gitlab-ci.yml", ".pre-commit-config.yaml"}),
     ("none", {".pre-commit-config.yaml"})],
)
def test_ci_chooses_the_pipeline_file(ci: str, hidden: set[str], tmp_path: Path) -> None:
    where = tmp_path / "site"
    flow.scaffold(run_editable, where, {}, "--ci", ci)
    committed = set(git.Repo(where).git.ls_files().splitlines())
    assert {name for name in committed if name.startswith(".")} == {".gitignore", *hidden}
    readme = (where / "ci" / "README.md").read_text()
    assert ("`.gitlab-ci.yml` (GitLab CI). It installs" in readme) == (ci == "gitlab")
    assert ("no pipeline file yet" in readme) == (ci == "none")
    flow.ok(run_editable(["xce-compile", ".", "--check"], where, {}))  # never read as site files
