"""Which policies a compile uses (docs/policies.md "Where the policies come from"):
``--policies DIR``, else ``policies/`` in the site folder, else ``policies/`` at the top of the
site's git repository, else the policies bundled with the package. A compile that finds no
catalog fails, naming the folder; it never leaves the allowlists out."""

from __future__ import annotations

import datetime
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import git
import pytest

from compiler import __version__
from compiler.cmds.compile import main as compile_main
from compiler.cmds.policy import main as policy_main
from compiler.compile import compile_site, located
from compiler.core import bundled
from compiler.core.problems import Problem, Problems
from compiler.policy.compile import (
    BUNDLED,
    GIVEN,
    IN_REPOSITORY,
    IN_SITE,
    POLICY_FILES,
    locate_policies,
)
from compiler.policy.gitsource import compile_at
from reconciler.cmds.apply import main as apply_main
from reconciler.cmds.plan import main as plan_main
from tests.conftest import ROOT

TODAY = datetime.date(2026, 11, 1)
SITE = "version: 1\nsite: {name: t}\n"
# the reporter role of roles.yaml, and the same role that may also query hosts
REPORTER = "      - supply.report\n      - supply.query\n    deny:\n      - supply.update\n"
REPORTER_QUERIES_HOSTS = REPORTER.replace(
    "      - supply.query\n", "      - supply.query\n      - host.query\n"
)


def _site(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "site.yaml").write_text(SITE)
    return path


def _policies(path: Path, *, reporter_queries_hosts: bool = False) -> Path:
    """A copy of the bundled policies; optionally the reporter role may call host.query."""
    shutil.copytree(bundled.policies_dir(), path)
    if reporter_queries_hosts:
        roles = path / "roles.yaml"
        text = roles.read_text()
        assert text.count(REPORTER) == 1
        roles.write_text(text.replace(REPORTER, REPORTER_QUERIES_HOSTS))
    return path


def _compile(site: Path, policies: Path | None = None) -> tuple[dict[str, Any], list[Problem]]:
    problems = Problems()
    compiled, files = compile_site(site, problems, policies, TODAY)
    shown = located(problems, files)
    assert compiled is not None and compiled.policy is not None, shown
    return compiled.policy.document, shown


def _reporter(document: dict[str, Any]) -> list[str]:
    return [o["name"] for o in document["roles"]["reporter"]["opcodes"]]


def test_the_bundled_data_is_this_repositorys_policies_example_and_schema() -> None:
    for name in POLICY_FILES:
        assert (bundled.policies_dir() / name).read_bytes() == (
            ROOT / "policies" / name
        ).read_bytes()
    assert (
        bundled.schema_file().read_bytes()
        == (ROOT / "docs" / "site-config.schema.json").read_bytes()
    )
    assert (bundled.example_site_dir() / "site.yaml").read_bytes() == (
        ROOT / "site-config" / "site.yaml"
    ).read_bytes()


def test_each_rule_wins_over_the_ones_after_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    git.Repo.init(repo)
    site = _site(repo / "sites" / "east")
    given = _policies(tmp_path / "given")
    in_site = _policies(site / "policies")
    at_top = _policies(repo / "policies")
    steps = [(given, GIVEN), (in_site, IN_SITE), (at_top, IN_REPOSITORY)]
    for folder, found in steps:
        source = locate_policies(site, given if found == GIVEN else None)
        assert (source.folder.resolve(), source.found) == (folder.resolve(), found)
        if found != GIVEN:
            shutil.rmtree(folder)
    source = locate_policies(site)
    assert (source.folder, source.found) == (bundled.policies_dir(), BUNDLED)


def test_this_repositorys_layout_uses_its_top_level_policies_folder() -> None:
    source = locate_policies(ROOT / "site-config")
    assert (source.folder.resolve(), source.found) == ((ROOT / "policies").resolve(), IN_REPOSITORY)


def test_a_policies_folder_beside_a_site_outside_git_is_not_taken(tmp_path: Path) -> None:
    """Only the site's own folder or its repository's top count: a neighbour is nobody's."""
    _policies(tmp_path / "policies", reporter_queries_hosts=True)
    site = _site(tmp_path / "site")
    assert locate_policies(site).found == BUNDLED
    assert "host.query" not in _reporter(_compile(site)[0])


def test_the_folder_found_makes_the_allowlists(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    git.Repo.init(repo)
    site = _site(repo / "site")
    assert "host.query" not in _reporter(_compile(site)[0])  # bundled
    _policies(repo / "policies", reporter_queries_hosts=True)
    assert "host.query" in _reporter(_compile(site)[0])
    given = _policies(tmp_path / "plain")
    assert "host.query" not in _reporter(_compile(site, given)[0])


def _manifest(site: Path, out: Path, *extra: str) -> dict[str, Any]:
    assert compile_main([str(site), "--out", str(out), *extra]) == 0
    manifest: dict[str, Any] = json.loads((out / "manifest.json").read_text())
    return manifest


def _sha256(folder: Path) -> dict[str, str]:
    return {
        n: "sha256:" + hashlib.sha256((folder / n).read_bytes()).hexdigest() for n in POLICY_FILES
    }


def test_the_manifest_says_which_policy_data_made_the_allowlists(tmp_path: Path) -> None:
    site = _site(tmp_path / "site")
    assert _manifest(site, tmp_path / "a")["policies"] == {
        "source": "bundled",
        "version": __version__,
        "files": _sha256(bundled.policies_dir()),
    }
    folder = _policies(site / "policies", reporter_queries_hosts=True)
    assert _manifest(site, tmp_path / "b")["policies"] == {
        "source": "folder",
        "path": "policies",
        "files": _sha256(folder),
    }
    given = _policies(tmp_path / "given")
    recorded = _manifest(site, tmp_path / "c", "--policies", str(given))["policies"]
    assert (recorded["path"], recorded["files"]) == ("../given", _sha256(given))


def _empty_catalog(folder: Path) -> None:
    _policies(folder)
    (folder / "opcodes.yaml").write_text("version: 1\ncategories: {}\nopcodes: []\n")


def _only_roles(folder: Path) -> None:
    folder.mkdir()
    shutil.copy(bundled.policies_dir() / "roles.yaml", folder)


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda folder: None, ["XCE010 policies folder 'pol' does not exist"]),
        (lambda folder: folder.write_text("x"), ["XCE010 policies folder 'pol' is not a folder"]),
        (lambda folder: folder.mkdir(), ["XCE011 no policy files in 'pol'"]),
        (_only_roles, ["XCE600 pol/guardrails.yaml", "XCE600 pol/opcodes.yaml"]),
        (_empty_catalog, ["XCE012 pol/opcodes.yaml:3"]),
    ],
    ids=["missing", "a-file", "empty", "incomplete", "empty-catalog"],
)
def test_a_compile_without_a_catalog_fails_naming_the_folder(
    make: Any,
    expected: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    _site(tmp_path / "site")
    make(tmp_path / "pol")
    assert compile_main(["site", "--out", "build", "--policies", "pol", "--format", "json"]) == 1
    problems = json.loads(capsys.readouterr().out)["problems"]
    found = [
        f"{p['code']} {p['message'] if p['subject'] else p['file']}"
        + (f":{p['line']}" if p["code"] == "XCE012" else "")
        for p in problems
    ]
    assert found == expected
    assert not (tmp_path / "build").exists()


def test_a_sites_policies_folder_is_never_read_as_site_config(tmp_path: Path) -> None:
    site = _site(tmp_path / "site")
    (site / "policies").mkdir()
    (site / "policies" / "hosts.yaml").write_text("version: 1\nhost_groups: []\n")
    problems = Problems()
    compile_site(site, problems, None, TODAY)
    assert [p.code for p in problems] == ["XCE011"]
    shutil.rmtree(site / "policies")
    _policies(site / "policies")
    assert _compile(site)[1] == []  # the policy files are not site-config files


@pytest.mark.parametrize("command", ["xce-plan", "xce-apply"])
def test_plan_and_apply_take_policies_too(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = _site(tmp_path / "site")
    (tmp_path / "empty").mkdir()
    args = [str(site), "--policies", str(tmp_path / "empty"), "--workdir", str(tmp_path / "w")]
    run = plan_main if command == "xce-plan" else apply_main
    assert run([*args, *(["--auto-approve"] if command == "xce-apply" else [])]) == 1
    assert "XCE011" in capsys.readouterr().err


def _commit(repo: git.Repo, message: str) -> str:
    repo.git.add(A=True)
    actor = git.Actor("Policy Tester", "tester@example.org")
    return repo.index.commit(message, author=actor, committer=actor).hexsha


def test_the_review_falls_back_to_the_bundled_policies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A site repository without a policies folder reviews against the bundled policies; one
    that adds its own sees exactly what its copy changes."""
    repo = git.Repo.init(tmp_path / "repo")
    top = Path(repo.working_tree_dir or "")
    _site(top / "site-config")
    base = _commit(repo, "a site")
    at_base = compile_at(repo, base, None, "site-config", TODAY)
    assert not at_base.problems.has_errors
    assert at_base.document == _compile(top / "site-config")[0]
    assert at_base.policies == f"the policies bundled with xce-gitops {__version__}"
    _policies(top / "site-config" / "policies", reporter_queries_hosts=True)
    _commit(repo, "our own policies")
    at_head = compile_at(repo, "HEAD", None, "site-config", TODAY)
    assert (at_head.policies, at_head.problems.has_errors) == ("site-config/policies/", False)
    assert "host.query" in _reporter(at_head.document)
    assert policy_main(["review", "--repo", str(top), "--base", base, "--format", "json"]) == 2
    out, err = capsys.readouterr()
    assert "host.query" in out
    assert f"bundled with xce-gitops {__version__} at {base[:12]}" in err
    assert "site-config/policies/ at HEAD" in err


def test_policy_compile_says_which_policies_it_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = git.Repo.init(tmp_path / "repo")
    top = Path(repo.working_tree_dir or "")
    _site(top / "site-config")
    assert policy_main(["compile", "--repo", str(top)]) == 0
    assert f"from the policies bundled with xce-gitops {__version__}" in capsys.readouterr().out
    _policies(top / "policies", reporter_queries_hosts=True)
    assert policy_main(["compile", "--repo", str(top)]) == 0
    assert "at the top of the site's git repository" in capsys.readouterr().out
    document = json.loads((top / "build" / "allowlists.json").read_text())
    assert "host.query" in _reporter(document)


def test_a_virtualenv_in_the_site_repository_is_not_read_as_site_config(tmp_path: Path) -> None:
    """An admin who makes a venv in the site repository (to pip install xce-gitops) does not
    get its packages' YAML compiled; any other folder is still read, so a site file put in
    a folder of its own is never silently skipped."""
    import subprocess
    import sys

    site = _site(tmp_path / "site")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(site / "venv")],
                   check=True)
    package = site / "venv" / "lib" / "some-package"
    package.mkdir(parents=True)
    (package / "config.yaml").write_text("not: site-config\n")
    assert _compile(site)[1] == []
    (site / "tools").mkdir()
    (site / "tools" / "config.yaml").write_text("not: site-config\n")
    problems = Problems()
    compile_site(site, problems, None, TODAY)
    assert [p.code for p in problems] == ["XCE003"]  # no version: read, and refused
