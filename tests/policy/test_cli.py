"""``xce-policy`` as users and CI run it: files written, exit codes, messages with lines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.cmds.policy import main
from compiler.core.canonical import digest
from tests.policy.gitrepo import PolicyRepo
from tests.policy.helpers import ROOT


def test_compile_writes_the_allowlists_and_their_digest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = PolicyRepo(tmp_path / "repo")
    assert main(["compile", "--repo", str(repo.path)]) == 0
    written = repo.path / "build" / "allowlists.json"
    doc = json.loads(written.read_bytes())
    assert set(doc["proxies"]) == {"proxy-a", "proxy-b", "proxy-idle"}
    assert "site-monitor" in doc["roles"]
    assert digest(written.read_bytes()) in capsys.readouterr().out
    # the same input gives the same bytes
    first = written.read_bytes()
    assert main(["compile", "--repo", str(repo.path), "--out", "again"]) == 0
    assert (repo.path / "again" / "allowlists.json").read_bytes() == first


def test_compile_errors_name_file_and_line_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = PolicyRepo(tmp_path / "repo")
    repo.edit("site-config/policy-roles.yaml", '"supply.report"]', '"supply.reprot"]')
    monkeypatch.chdir(repo.path)
    assert main(["compile", "--format", "github"]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("::error file=site-config/policy-roles.yaml,line=6,")  # the document
    assert "unknown opcode 'supply.reprot'" in err and "did you mean 'supply.report'?" in err
    assert not (repo.path / "build").exists()


def test_compile_without_a_site_and_with_a_missing_explicit_site(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = PolicyRepo(tmp_path / "repo", with_policies=False)
    (repo.path / "policies").symlink_to(ROOT / "policies")
    # no site at the top nor in site-config/: refused, never allowlists without the site's
    assert main(["compile", "--repo", str(repo.path)]) == 1
    assert "error[XCE030]" in capsys.readouterr().err
    assert not (repo.path / "build").exists()
    assert main(["compile", "--repo", str(repo.path), "--site", "sites/east"]) == 1
    assert "XCE662" in capsys.readouterr().err


def test_usage_errors_exit_1_not_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["review"]) == 1  # --base is required; 2 would read as "changes"
    assert "XCE670" in capsys.readouterr().err
    assert main(["review", "--base", "x", "--format", "yaml"]) == 1
    assert main(["frobnicate"]) == 1


def _review_process(repo: PolicyRepo, base: str) -> subprocess.CompletedProcess[str]:
    """``xce-policy review`` as CI runs it: a separate process, markdown for the PR."""
    return subprocess.run(
        [sys.executable, "-m", "compiler.cmds.policy", "review", "--base", base,
         "--format", "markdown"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )


def test_review_process_exit_code_for_ci(tmp_path: Path) -> None:
    repo = PolicyRepo(tmp_path / "repo")
    repo.edit(
        "policies/roles.yaml",
        "      - job.requeue\n",
        "      - job.requeue\n      - config.reload\n",
    )
    repo.commit("scheduler reloads config")
    done = _review_process(repo, "HEAD~1")
    assert done.returncode == 1, done.stderr  # scheduler may not hold an admin opcode
    assert "XCE630" in done.stderr and "Traceback" not in done.stderr
    text = (repo.path / "site-config" / "policy-waivers.yaml").read_text()
    repo.write(
        "site-config/policy-waivers.yaml",
        text
        + text[text.index("    - name:") :]
        .replace("proxy-admin-reload", "scheduler-reload")
        .replace("role: proxy", "role: scheduler"),
    )
    repo.commit("waive it")
    done = _review_process(repo, "HEAD~2")
    assert done.returncode == 3, done.stderr
    assert "| ⚠️ | role `scheduler` | gains `config.reload (801, admin)` |" in done.stdout
    assert "| ⚠️ | waiver `scheduler-reload` | added:" in done.stdout
