"""A folder of the site that cannot be listed is an error naming it, never an absence: its
host groups would drop out of the desired map, and the next plan would release the hosts.

Root reads a folder whatever its mode, so as root the commands run without the two
capabilities that let it (``setpriv``): the folder's mode then counts, as for anyone else.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from compiler.core import codes
from compiler.core.problems import UserError
from compiler.source.yaml_source import find_yaml_files
from tests.apply.small_site import write_site
from tests.inputs.test_input_commands import drive

EXTRA = """\
version: 1
host_groups:
  - name: extra
    hosts: ex[001-193]
"""


def as_anyone() -> list[str]:
    """The prefix that makes a mode of 000 stop this user reading a folder."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("as root, needs setpriv to drop the capabilities that read any folder")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--"]


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """The small site with a folder of one more host group, which nobody may list."""
    folder = write_site(tmp_path / "site")
    (folder / "extra").mkdir()
    (folder / "extra" / "hosts.yaml").write_text(EXTRA)
    (folder / "extra").chmod(0)
    return folder


def test_a_folder_that_cannot_be_listed_fails_compile_and_plan(site: Path) -> None:
    cases = [{"command": "xce-compile", "argv": ["site", "--check"]},
             {"command": "xce-plan", "argv": ["site", "--live", "/dev/null"]},
             {"command": "xce-policy", "argv": ["compile", "--repo", ".", "--site", "site"]}]
    ran = drive(cases, site.parent, prefix=as_anyone())
    for case, result in zip(cases, ran, strict=True):
        assert result["status"] == 1, (case, result)
        assert (f"site/extra: error[{codes.CANNOT_READ}]: cannot list this folder: "
                "Permission denied") in result["stderr"], (case, result)


def test_an_unlistable_site_folder_is_said_once(site: Path) -> None:
    """The site folder itself: its listing fails, so no 'holds no YAML files' follows."""
    site.chmod(0)
    (result,) = drive([{"command": "xce-compile", "argv": ["site", "--check"]}], site.parent,
                      prefix=as_anyone())
    assert result["status"] == 1
    assert result["stderr"].startswith(f"site: error[{codes.CANNOT_READ}]: cannot list this "
                                       "folder: Permission denied")
    assert "no YAML files" not in result["stderr"]
    site.chmod(0o755)


def test_the_listing_failure_stops_a_caller_without_problems(tmp_path: Path) -> None:
    """Without a problem list the first failure raises: no caller gets a partial list."""
    with pytest.raises(UserError, match="cannot list this folder: No such file"):
        find_yaml_files(tmp_path / "nowhere")
