"""Issue 21: the pre-commit hook of a site that installs xce-gitops from a wheel, where no
package index holds it. The default hook (``language: python``) makes pre-commit pip-install
the pinned release by name, which fails there ("No matching distribution"); the
``xce-init --hook system`` variant runs the xce-compile installed where the admin commits.
Real pre-commit runs in repositories made by xce-init, offline (``PIP_NO_INDEX``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import git
import pytest

from tests.scaffold import flow
from tests.scaffold.conftest import run_editable

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
TYPO = ("    hosts: cn[01-08]\n", "    hosst: cn[01-08]\n")  # hosts.yaml line 6, column 5


def _committer(home: Path) -> dict[str, str]:
    """A shell where the site's xce-gitops is installed (the dev venv's commands on PATH)
    and pip finds no index, pre-commit's store in ``home``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYTEST_") and k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env.update(flow.no_git_user(home), PRE_COMMIT_HOME=str(home / "pre-commit"),
               PIP_NO_INDEX="1", PIP_FIND_LINKS="", PATH=os.pathsep.join([str(BIN), env["PATH"]]))
    return env


def _pre_commit(site: Path, env: dict[str, str]) -> tuple[int, str]:
    done = subprocess.run([str(BIN / "pre-commit"), "run", "--all-files"], cwd=site, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    return done.returncode, done.stdout + done.stderr


def test_the_system_hook_runs_the_installed_xce_compile(tmp_path: Path) -> None:
    env = _committer(tmp_path / "home")
    site = tmp_path / "site"
    flow.scaffold(run_editable, site, flow.no_git_user(tmp_path / "home"), "--hook", "system")
    config = (site / ".pre-commit-config.yaml").read_text()
    assert "language: system" in config and "additional_dependencies" not in config
    assert "(`language: system`)" in (site / "ci" / "README.md").read_text()
    code, out = _pre_commit(site, env)
    assert code == 0 and "Passed" in out, out
    hosts = site / "hosts.yaml"
    hosts.write_text(hosts.read_text().replace(*TYPO))
    code, out = _pre_commit(site, env)
    assert code == 1 and "hosts.yaml:6:5: error[XCE101]: unknown key 'hosst'" in out, out
    assert not (site / "build").exists()


def test_the_default_hook_needs_an_index_that_holds_the_release(tmp_path: Path) -> None:
    """What the system variant is for: the pinned hook cannot install offline, and the
    file says what to do instead."""
    env = _committer(tmp_path / "home")
    site = tmp_path / "site"
    flow.scaffold(run_editable, site, flow.no_git_user(tmp_path / "home"))
    config = (site / ".pre-commit-config.yaml").read_text()
    assert "xce-init --print-ci pre-commit --hook system" in config
    code, out = _pre_commit(site, env)
    assert code != 0 and "No matching distribution" in out, out
    printed = run_editable(["xce-init", "--print-ci", "pre-commit", "--hook", "system"], site, {})
    (site / ".pre-commit-config.yaml").write_text(flow.ok(printed))
    git.Repo(site).index.add([".pre-commit-config.yaml"])
    code, out = _pre_commit(site, env)
    assert code == 0 and "Passed" in out, out
