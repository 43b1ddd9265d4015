"""Issue 10 §4 and §5 from the installed wheel, outside this repository, with a site folder
not named site-config: every command's --version, and a saved plan applied as printed,
refused with one error against another workdir, its repeated log lines grouped."""

from __future__ import annotations

import shlex
import shutil
import tomllib
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_SITE
from tests.wheel.conftest import ROOT, Installed

pytestmark = [pytest.mark.wheel, pytest.mark.slow]

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
ENV = {"BURST_API_TOKEN": "not-a-secret", "CI": "true"}  # the example's cloud credential


def test_every_installed_command_answers_version(installed: Installed, tmp_path: Path) -> None:
    for name in sorted(PROJECT["scripts"]):
        done = installed.run([installed.bin(name), "--version"], cwd=tmp_path)
        assert (name, done.returncode, done.stderr) == (name, 0, "")
        assert done.stdout == f"{name} (xce-gitops {PROJECT['version']})\n"


def test_the_issue_example_a_saved_plan_applies_as_printed(installed: Installed,
                                                           tmp_path: Path) -> None:
    """``cp -r site-config "$d/site" && cd "$d" && xce-plan site --out plan.json; xce-apply
    plan.json`` failed with XCE006 (no site-config); a missing workdir gave 48 × XCE822."""
    shutil.copytree(EXAMPLE_SITE, tmp_path / "site",
                    ignore=shutil.ignore_patterns(".xce", "build"))
    planned = installed.run(["xce-plan", "site", "--out", "plan.json"], tmp_path, ENV)
    assert planned.returncode == 2, planned.stderr
    printed = planned.stderr.rsplit("apply it with: ", 1)[1].strip()
    assert printed == "xce-apply plan.json"
    applied = installed.run(shlex.split(printed), tmp_path, ENV)
    assert applied.returncode == 0, applied.stderr
    assert "3297 done" in applied.stdout
    assert "Done with warnings (20):" in applied.stdout
    assert applied.stdout.count("does not resolve to a uid") == 1  # 20 users, one line

    again = installed.run(shlex.split(printed), tmp_path, ENV)
    assert again.returncode == 0, again.stderr
    assert "0 done, 3297 already done" in again.stdout
    assert again.stderr.count("already-done") == 1  # one log line, not 3,297

    quotas = tmp_path / "site" / "storage" / "quotas.yaml"
    quotas.write_text(quotas.read_text().replace("alice: 2TiB", "alice: 3TiB"))
    assert installed.run(["xce-plan", "site", "--out", "plan.json"], tmp_path,
                         ENV).returncode == 2
    shutil.move(tmp_path / "site" / ".xce", tmp_path / "elsewhere")
    refused = installed.run(shlex.split(printed), tmp_path, ENV)
    assert refused.returncode == 1
    assert refused.stderr.count("error[") == 1 and "error[XCE767]" in refused.stderr
    assert "XCE822" not in refused.stderr and "Traceback" not in refused.stderr
    shutil.move(tmp_path / "elsewhere", tmp_path / "site" / ".xce")
    done = installed.run(shlex.split(printed), tmp_path, ENV)
    assert done.returncode == 0 and "1 done" in done.stdout, done.stderr
