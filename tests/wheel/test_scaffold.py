"""xce-init and the site's snapshot tests from the wheel installed in a fresh venv, outside this
repository: the same flow as tests/scaffold (tests/scaffold/flow.py), the way a site runs it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.scaffold import flow
from tests.wheel.conftest import Installed

pytestmark = [pytest.mark.wheel, pytest.mark.slow]


@pytest.fixture(scope="module")
def run(installed: Installed) -> flow.Run:
    def run_installed(
        args: list[str], cwd: Path, env: dict[str, str]
    ) -> subprocess.CompletedProcess[str]:
        return installed.run(args, cwd, env)

    return run_installed


@pytest.fixture(scope="module")
def repo(run: flow.Run, tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("wheel-site") / "cluster-west"
    flow.scaffold(run, where, flow.no_git_user(where.parent / "home"))
    return where


def test_the_new_repository(repo: Path) -> None:
    flow.check_new_repository(repo, "xce-init <xce-init@localhost>")


def test_compile_plan_and_apply(run: flow.Run, repo: Path) -> None:
    flow.check_compile_plan_apply(run, repo)


def test_the_pipeline_files_from_the_package(run: flow.Run, repo: Path) -> None:
    flow.check_pipeline_files(run, repo)


def test_a_role_change_is_reviewed(run: flow.Run, repo: Path) -> None:
    flow.check_role_change_is_reviewed(run, repo)


def test_a_non_empty_folder_is_refused(run: flow.Run, repo: Path) -> None:
    out = flow.ok(run(["xce-init", str(repo)], repo.parent, {}), 1)
    assert "error[XCE021]" in out and "Traceback" not in out


def test_the_example_site_from_the_package(run: flow.Run, tmp_path: Path) -> None:
    flow.ok(run(["xce-init", "--example", "east"], tmp_path, {}))
    assert (tmp_path / "east" / "sample-data").is_dir()
    assert "compiled site hpc-east" in flow.ok(run(["xce-compile", "."], tmp_path / "east", {}))
