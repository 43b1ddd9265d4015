"""Issue 21, "Small things a newcomer trips on": what a new site repository and its first
commands say — the plan xce-drift's fix saves is ignored, GitLab's README speaks of merge
requests and names every variable its pipeline reads, ``--format github`` shows each problem
once, and the guide lists every command the package installs."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from compiler.site_repo.create import REPOSITORY, SMALL_SITE, render_templates
from compiler.site_repo.pipeline import Pipeline
from reconciler.drift.detect import FIX_PLAN
from tests.scaffold.conftest import run_editable
from tests.scaffold.flow import is_clean, scaffold

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _repository(dest: Path, ci: str) -> Path:
    render_templates(dest, {**SMALL_SITE, **REPOSITORY}, "demo", False, Pipeline(ci=ci))
    return dest


@pytest.mark.slow
def test_the_plan_xce_drift_s_fix_saves_is_not_committed(tmp_path: Path) -> None:
    repo = tmp_path / "site"
    scaffold(run_editable, repo, {})
    (repo / FIX_PLAN).write_text("{}")
    (repo / "xce-out").mkdir()
    (repo / "xce-out" / "plan.md").write_text("a pipeline's output, run in a clone")
    assert is_clean(repo)


@pytest.mark.parametrize("ci", ["github", "gitlab"])
def test_the_ci_readme_speaks_the_forge_s_words_and_names_its_variables(
        ci: str, tmp_path: Path) -> None:
    readme = (_repository(tmp_path, ci) / "ci" / "README.md").read_text()
    # the secrets and variables the jobs read (GitLab's reach the commands as environment)
    wanted = {"XCE_STATE_URL", "PGPASSWORD", "XCE_WORKDIR"}
    if ci == "gitlab":
        wanted.add("XCE_GITLAB_TOKEN")
    pipeline = Pipeline(ci=ci).render(ci)
    assert all(name in pipeline for name in wanted)
    for name in sorted(wanted):
        assert f"`{name}`" in readme, f"{ci}: ci/README.md does not name {name}"
    words = ("merge request", "pull request") if ci == "gitlab" else ("pull request",
                                                                      "merge request")
    assert words[0] in readme and words[1] not in readme
    assert "by hand" in readme  # the bootstrap and the recovery


def test_github_annotations_are_not_printed_twice(tmp_path: Path) -> None:
    site = _repository(tmp_path, "github")
    hosts = site / "hosts.yaml"
    hosts.write_text(hosts.read_text().replace("hosts: cn[01-08]", "hosst: cn[01-08]"))
    done = subprocess.run([str(BIN / "xce-compile"), str(site), "--check", "--format", "github"],
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 1
    assert done.stdout.startswith("::error ") and "unknown key 'hosst'" in done.stdout
    assert (done.stdout + done.stderr).count("unknown key 'hosst'") == 1, done.stderr
    assert done.stderr == ("xce-compile: the site does not compile: 1 error(s), 0 warning(s) "
                           "(error[XCE101]), each shown above as an annotation\n")
    text = subprocess.run([str(BIN / "xce-compile"), str(site), "--check"], capture_output=True,
                          text=True, check=False, timeout=120)
    assert "error[XCE101]: unknown key 'hosst'" in text.stderr  # a terminal's run as before


def test_the_guide_lists_every_command_installed() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    guide = (ROOT / "docs" / "getting-started.md").read_text()
    listed = re.search(r"This gives you the commands \(([^)]*)\)", guide)
    assert listed, "docs/getting-started.md lost its list of commands"
    named = set(re.findall(r"`(xce-[\w-]+)`", listed.group(1)))
    assert named == set(scripts)


def test_the_test_double_is_no_command_on_users_path() -> None:
    """The example's simulated cloud ships as a module: no console script, and the example
    site binds it by module (issue 21)."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert not any("testdoubles" in target for target in scripts.values())
    example = (ROOT / "site-config" / "providers.yaml").read_text()
    assert "command: [python3, -m, reconciler.testdoubles.sim_provider, cloud]" in example

