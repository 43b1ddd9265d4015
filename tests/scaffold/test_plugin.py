"""The pytest plugin in a site's repository: which folder it compiles, that it stays out of
the way, and what a site that does not compile shows (real pytest processes)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from compiler.site_repo.create import SMALL_SITE, render_templates
from tests.scaffold.conftest import run_editable
from tests.scaffold.flow import ok

pytestmark = pytest.mark.slow

INNER = '''
import os
import sys


def test_the_plugin_imports_nothing_of_the_compiler_before_a_fixture_asks():
    assert "compiler.compile" not in sys.modules


def test_the_site_folder(xce_site_dir, pytestconfig):
    assert xce_site_dir.resolve() == (pytestconfig.rootpath / os.environ["SITE"]).resolve()


def test_a_snapshot(xce_map_summary, snapshot):
    assert xce_map_summary == snapshot
'''
EXTRA_VOLUME = """version: 1
volumes:
  - {name: scratch, provider: shared-fs, path: /scratch, capacity: 1TiB}
"""


@dataclass(frozen=True)
class Project:
    root: Path
    first_run: str  # the output of its first pytest run (--snapshot-update)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """A repository with its site in conf/ (the ini setting) and another in other/, after its
    first pytest run."""
    root = tmp_path_factory.mktemp("plugin")
    for site in ("conf", "other"):
        render_templates(root / site, SMALL_SITE, site, example=False)
    (root / "conf" / "extra.yaml").write_text(EXTRA_VOLUME)  # a warning: mounted by no group
    (root / "pytest.ini").write_text("[pytest]\nxce_site = conf\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_inner.py").write_text(INNER)
    first = ok(run_editable(["pytest", "--snapshot-update"], root, {"SITE": "conf"}))
    return Project(root, first)


def test_the_ini_setting_names_the_site_and_warnings_are_shown(project: Project) -> None:
    assert "3 passed" in project.first_run
    assert "XceSiteWarning: conf/extra.yaml:" in project.first_run
    assert "warning[XCE501]: volume 'scratch'" in project.first_run


def test_the_option_overrides_the_ini_setting(project: Project) -> None:
    args = ["pytest", "-p", "no:cacheprovider", "--xce-site", "other", "-k", "site_folder"]
    assert "1 passed" in ok(run_editable(args, project.root, {"SITE": "other"}))


def _broken(project: Path) -> Path:
    hosts = project / "conf" / "hosts.yaml"
    hosts.write_text(hosts.read_text().replace("cn[01-08]", "cn[01-08"))
    return hosts


def test_a_site_that_does_not_compile_shows_the_compilers_messages(project: Project) -> None:
    root = project.root
    hosts = _broken(root)
    try:
        out = ok(run_editable(["pytest", "-p", "no:cacheprovider"], root, {"SITE": "conf"}), 1)
        snapshot = root / "tests" / "__snapshots__" / "test_inner.ambr"
        before = snapshot.read_bytes()
        updated = ok(run_editable(["pytest", "-p", "no:cacheprovider", "--snapshot-update"],
                                  root, {"SITE": "conf"}), 1)
    finally:
        hosts.write_text(hosts.read_text().replace("cn[01-08", "cn[01-08]"))
    located = "conf/hosts.yaml:6:12: error[XCE201]: bad hostlist 'cn[01-08': missing ']'"
    assert f"the site-config {root / 'conf'} does not compile:\n" in out and located in out
    assert "2 passed, 1 error" in out
    # the snapshot was never reached: not "unused", and no advice to delete it
    assert "unused" not in out and "--snapshot-update" not in out, out
    assert "xce-gitops: the site does not compile" in out
    for internal in ("Traceback", "review_data.py", "compiler/compile.py"):
        assert internal not in out
    # --snapshot-update keeps the snapshots of a site that does not compile, and fails
    assert snapshot.read_bytes() == before
    assert "xce-gitops: snapshots not updated" in updated and located in updated
