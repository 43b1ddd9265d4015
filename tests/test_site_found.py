"""Issue 19 §8: every command finds the site by one rule, says which it used, or refuses.

Run as a new admin would, in a repository ``xce-init`` made (the site at its root), in one
that keeps its site in ``site-config/``, and in an empty folder, where each command must
refuse and leave nothing behind (no ``.xce``, no ``site-config/``, no ``build/``).
"""

from __future__ import annotations

import importlib
import json
import tomllib
from collections.abc import Callable
from pathlib import Path

import git
import pytest

from compiler.site_repo.create import SMALL_SITE, render_templates

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
    "scripts"]
ACTOR = git.Actor("Site Admin", "admin@example.org")
Main = Callable[[list[str]], int]

# each command as an admin types it without naming the site, and the file it leaves in the
# site's workdir (None: it writes nothing beside the site)
COMMANDS: dict[str, tuple[list[str], str | None]] = {
    "xce-compile": (["--check"], None),
    "xce-plan": ([], None),
    "xce-drift": ([], "state.sqlite"),
    "xce-apply": (["--auto-approve"], "state.sqlite"),
    "xce-lock": (["list"], "state.sqlite"),
    "xce-map": (["report", "join", "cn03"], "providers/controller/map.sqlite"),
    "xce-policy": (["compile", "--out", "build"], None),
}


def _main(name: str) -> Main:
    module, function = SCRIPTS[name].split(":")
    main: Main = getattr(importlib.import_module(module), function)
    return main


def _commit(repo: git.Repo, message: str) -> str:
    repo.git.add(A=True)
    return repo.index.commit(message, author=ACTOR, committer=ACTOR).hexsha


def _site_repo(top: Path, folder: str, name: str) -> git.Repo:
    """A git repository holding the small site xce-init writes, in ``folder`` of it."""
    render_templates(top / folder, SMALL_SITE, name, example=False)
    (top / ".gitignore").write_text(".xce/\nbuild/\n")
    repo = git.Repo.init(top, initial_branch="main")
    _commit(repo, "the site")
    return repo


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("XCE_STATE_URL", "XCE_WORKDIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XCE_CRASH_DIR", str(tmp_path / "crashes"))


def _run(name: str, argv: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    monkeypatch.chdir(cwd)
    capsys.readouterr()
    code = _main(name)(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_in_a_repository_xce_init_made_the_site_is_its_root(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    top = tmp_path / "my-site"
    _site_repo(top, ".", "my-site")
    argv, left = COMMANDS[name]
    code, out, err = _run(name, argv, top, monkeypatch, capsys)
    assert code in (0, 2), err
    assert "site: ./ (found in " in err and "site: ./" not in out
    assert not (top / "site-config").exists()  # nothing made where the site is not
    if left is not None:
        assert (top / ".xce" / left).is_file()
    if name == "xce-compile":
        assert out.startswith("checked site my-site ")


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_in_a_repository_with_site_config_the_site_is_found_there(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    top = tmp_path / "repo"
    _site_repo(top, "site-config", "east")
    argv, left = COMMANDS[name]
    code, out, err = _run(name, argv, top, monkeypatch, capsys)
    assert code in (0, 2), err
    assert "site: site-config/ (found in " in err
    assert not (top / ".xce").exists()
    if left is not None:
        assert (top / "site-config" / ".xce" / left).is_file()
    if name == "xce-compile":
        assert out.startswith("checked site east ")


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_in_an_empty_folder_every_command_refuses_and_makes_nothing(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    argv, _ = COMMANDS[name]
    code, _, err = _run(name, argv, empty, monkeypatch, capsys)
    assert code == 1
    assert "error[XCE030]: no site found: neither the " in err and "site.yaml" in err
    assert "Traceback" not in err and not (tmp_path / "crashes").exists()
    assert list(empty.iterdir()) == []  # no .xce, no site-config/, no build/


def test_the_current_folder_comes_before_site_config(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    top = tmp_path / "both"
    render_templates(top / "site-config", SMALL_SITE, "below", example=False)
    render_templates(top, SMALL_SITE, "here", example=False)
    code, _, err = _run("xce-lock", ["list"], top, monkeypatch, capsys)
    assert code == 0 and "site: ./ (found in the current folder)\n" in err
    assert (top / ".xce" / "state.sqlite").is_file()
    assert not (top / "site-config" / ".xce").exists()


def test_a_site_given_is_used_without_a_note(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    _site_repo(tmp_path / "repo", "site-config", "east")
    code, out, err = _run("xce-plan", ["site-config", "--format", "json"], tmp_path / "repo",
                          monkeypatch, capsys)
    assert code == 2 and "site:" not in err
    assert json.loads(out)["actions"]  # stdout is the document alone
    code, out, err = _run("xce-plan", ["--format", "json"], tmp_path / "repo", monkeypatch,
                          capsys)
    assert code == 2 and "site: site-config/ (found in the current folder)" in err
    assert json.loads(out)["actions"]  # the note is on stderr, never in the document


@pytest.mark.parametrize(("name", "argv"), [
    ("xce-map", ["--site", "nowhere", "report", "join", "cn03"]),
    ("xce-lock", ["--site", "nowhere", "list"]),
    ("xce-map", ["--site", "empty", "show"]),
])
def test_a_site_folder_given_that_holds_no_site_makes_no_map_nor_store(
        name: str, argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    code, _, err = _run(name, argv, tmp_path, monkeypatch, capsys)
    assert code == 1 and "error[XCE031]: the site folder " in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]
    assert list((tmp_path / "empty").iterdir()) == []


def test_the_policy_review_finds_the_site_at_the_root(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The README's ``xce-policy review --base main`` in a repository xce-init made: a new
    role is an escalation (exit 3), never "no change" because site-config/ is not there."""
    top = tmp_path / "my-site"
    repo = _site_repo(top, ".", "my-site")
    repo.create_head("new-role").checkout()
    with (top / "policy.yaml").open("a") as fh:
        fh.write("    - name: site-ops\n      description: Operations\n"
                 "      allow: [host.query]\n")
    _commit(repo, "a new role")
    code, out, err = _run("xce-policy", ["review", "--base", "main"], top, monkeypatch, capsys)
    assert code == 3, err
    assert "role site-ops: new role  [escalation: new role]" in out
    assert "site: ./ (found in the repository's top folder at main and HEAD)" in err
    code, out, _ = _run("xce-policy", ["review", "--base", "main", "--site", "."], top,
                        monkeypatch, capsys)
    assert code == 3 and "role site-ops: new role" in out


def test_a_revision_without_a_site_is_an_error_not_no_change(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    top = tmp_path / "repo"
    top.mkdir()
    repo = git.Repo.init(top, initial_branch="main")
    (top / "README.md").write_text("a repository with no site yet\n")
    before = _commit(repo, "no site")
    render_templates(top, SMALL_SITE, "late", example=False)
    _commit(repo, "the site")
    code, out, err = _run("xce-policy", ["review", "--base", before], top, monkeypatch, capsys)
    assert code == 1 and out == ""
    assert f"error[XCE032]: no site at {before}: neither the top of the repository" in err
    code, out, err = _run("xce-policy", ["review", "--base", "HEAD", "--site", "site-config"],
                          top, monkeypatch, capsys)
    assert code == 1 and "error[XCE032]: no site at HEAD: site-config/ holds no site.yaml" in err
