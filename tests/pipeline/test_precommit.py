"""The pre-commit hook, run by pre-commit itself in site repositories made by xce-init:
this checkout's ``.pre-commit-hooks.yaml`` named by a configuration (the one ``pre-commit
try-repo`` writes, and docs/ci.md's form naming xce-gitops' repository and a rev), and the
site's own ``.pre-commit-config.yaml`` with the release it pins. pre-commit makes its own
virtualenv and pip-installs xce-gitops and its dependencies there, so these take a minute or
two each; the good and the broken site share one pre-commit store, so that is done once
(``try-repo`` itself would install it in a store of its own on every run).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import git
import pytest

from tests.scaffold import flow
from tests.scaffold.conftest import run_editable
from tests.wheel.conftest import Installed, _copy_tree, _source_files, installed  # noqa: F401

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]  # this checkout: the hook repository
PRE_COMMIT = str(Path(sys.executable).parent / "pre-commit")
HOOK_LINE = "xce-compile (the site compiles)"
TYPO = ("    hosts: cn[01-08]\n", "    hosst: cn[01-08]\n")  # hosts.yaml line 6, column 5
TIMEOUT = 600


def _environ(store: Path) -> dict[str, str]:
    """A shell's environment with pre-commit's store in ``store`` and no pytest state; pip
    keeps its own cache (HOME stays), so a second run downloads nothing."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYTEST_") and k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PRE_COMMIT_HOME"] = str(store)
    return env


def _hook_repository(dest: Path) -> Path:
    """This checkout as a hook repository pre-commit can clone: its files, tracked and new
    (what the wheel is built from, and the hooks' manifest), in one commit. try-repo on the
    checkout itself would miss the files git does not track yet."""
    _copy_tree([*_source_files(), ".pre-commit-hooks.yaml"], dest)
    repo = git.Repo.init(dest)
    repo.git.add(all=True)
    actor = git.Actor("test", "test@localhost")
    repo.index.commit("the checkout", author=actor, committer=actor)
    return dest


def _site(where: Path, home: Path, typo: bool) -> Path:
    """A site repository made by xce-init; with a typo in hosts.yaml, committed."""
    flow.scaffold(run_editable, where, flow.no_git_user(home))
    if typo:
        hosts = where / "hosts.yaml"
        assert hosts.read_text().count(TYPO[0]) == 1
        hosts.write_text(hosts.read_text().replace(*TYPO))
        repo = git.Repo(where)
        repo.index.add(["hosts.yaml"])
        actor = git.Actor("admin", "admin@localhost")
        repo.index.commit("a typo", author=actor, committer=actor)
    return where


def _hook_config(hooks: Path, dest: Path) -> Path:
    """The configuration ``pre-commit try-repo HOOKS xce-compile`` writes and runs: the hook
    repository at its commit, the hook with the manifest's own arguments."""
    rev = git.Repo(hooks).head.commit.hexsha
    dest.write_text(f"repos:\n  - repo: {hooks}\n    rev: {rev}\n"
                    "    hooks: [{id: xce-compile}]\n")
    return dest


@pytest.fixture(scope="module")
def try_repo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    """``pre-commit run --config HOOK-CONFIG --all-files`` (``_hook_config``) in a good site
    and in one with a typo, both at once with one pre-commit store: the first to get its lock
    installs the hook's environment, the other uses it. Site and output by name."""
    base = tmp_path_factory.mktemp("try-repo")
    config = _hook_config(_hook_repository(base / "xce-gitops"), base / "hook-config.yaml")
    env = _environ(base / "pre-commit")
    runs: dict[str, tuple[Path, subprocess.Popen[str]]] = {}
    for name in ("good", "typo"):
        site = _site(base / name, base / f"home-{name}", typo=name == "typo")
        command = [PRE_COMMIT, "run", "--config", str(config), "--all-files"]
        runs[name] = (site, subprocess.Popen(command, cwd=site, env=env, text=True,
                                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    done = {name: (site, proc.communicate(timeout=TIMEOUT)[0]) for name, (site, proc) in
            runs.items()}
    return {name: (site, f"exit {runs[name][1].returncode}\n{out}")
           for name, (site, out) in done.items()}


def test_a_good_site_passes_and_nothing_is_written(
    try_repo: dict[str, tuple[Path, str]]
) -> None:
    site, out = try_repo["good"]
    assert out.startswith("exit 0\n"), out
    assert f"{HOOK_LINE}..." in out and out.rstrip().endswith("Passed"), out
    assert not (site / "build").exists()  # xce-compile --check writes nothing
    assert flow.is_clean(site)


def test_a_typo_fails_at_its_file_line_and_column(try_repo: dict[str, tuple[Path, str]]) -> None:
    site, out = try_repo["typo"]
    assert out.startswith("exit 1\n"), out
    assert "Failed" in out
    assert "hosts.yaml:6:5: error[XCE101]: unknown key 'hosst'" in out, out
    assert "hint: did you mean 'hosts'?" in out
    assert "Traceback" not in out
    assert not (site / "build").exists()


@pytest.mark.wheel
def test_the_site_s_own_config_installs_the_pinned_release(
    installed: Installed, tmp_path: Path  # noqa: F811
) -> None:
    """``pre-commit run`` with the .pre-commit-config.yaml xce-init wrote: it installs
    xce-gitops of the version it pins (here from the wheel of this checkout) and passes."""
    env = _environ(tmp_path / "home" / "pre-commit")
    site = _site(tmp_path / "site", tmp_path / "home", typo=False)
    finds = [str(installed.wheel.parent), *filter(None, [env.get("PIP_FIND_LINKS")])]
    env["PIP_FIND_LINKS"] = " ".join(finds)
    done = subprocess.run([PRE_COMMIT, "run", "--all-files"], cwd=site, env=env, text=True,
                          capture_output=True, timeout=TIMEOUT, check=False)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert f"{HOOK_LINE}..." in out and "Passed" in out, out
    assert not (site / "build").exists()
    assert flow.is_clean(site)
