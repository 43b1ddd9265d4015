"""xce-init refuses what it must not touch, and a failure on the way leaves nothing behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.cmds.init import main
from tests.scaffold.conftest import run_editable
from tests.scaffold.flow import ok


def _init(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """xce-init in this process (its refusals come before any file is written); it exits 1."""
    assert main(args) == 1
    captured = capsys.readouterr()
    return captured.out + captured.err


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_non_empty_folder_is_refused_and_left_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "site"
    (target / "notes").mkdir(parents=True)
    (target / "notes" / "todo.txt").write_text("hosts\n")
    (target / ".hidden").write_text("")
    before = _tree(target)
    out = _init([str(target)], capsys)
    assert (
        f"{target}: error[XCE021]: the folder '{target}' is not empty (it holds .hidden, notes)"
        in out
    )
    assert "Traceback" not in out
    assert _tree(target) == before
    assert not (target / ".git").exists()


def test_a_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "site").write_text("not a folder")
    out = _init(["site"], capsys)
    assert "error[XCE022]: 'site' exists and is not a folder" in out


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["My Site"], "error[XCE023]: site name 'My Site' is not a valid name"),
        (["ok", "--site-name", "a b"], "error[XCE023]: site name 'a b' is not a valid name"),
        (["ok", "--example", "--site-name", "x"], "error[XCE020]: argument --site-name: not "
         "allowed with argument --example"),
        ([], "error[XCE020]: the following arguments are required: DIR"),
    ],
)
def test_usage_and_name_mistakes_exit_1(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    expected: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert expected in _init(args, capsys)
    assert list(tmp_path.iterdir()) == []


def test_the_folder_name_hint_names_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = _init(["My Site"], capsys)
    assert "hint: the site is named after its folder by default: pass --site-name NAME" in out


def _failing_syrupy(where: Path) -> dict[str, str]:
    """A syrupy that cannot be imported, first on the path: the first pytest run fails."""
    (where / "syrupy").mkdir(parents=True)
    (where / "syrupy" / "__init__.py").write_text("raise ImportError('syrupy is broken here')\n")
    return {"PYTHONPATH": str(where)}


@pytest.mark.slow
@pytest.mark.parametrize("failure", ["snapshots", "git"])
def test_a_failure_on_the_way_leaves_nothing(tmp_path: Path, failure: str) -> None:
    staging = tmp_path / "tmp"
    staging.mkdir()
    env = {"TMPDIR": str(staging)}
    if failure == "snapshots":
        env |= _failing_syrupy(tmp_path / "broken")
        expected = "error[XCE025]: the first run of the new repository's tests failed"
    else:
        env["GIT_DIR"] = str(tmp_path / "no" / "such" / "place" / ".git")
        expected = "error[XCE024]: git failed: git init: fatal:"
    out = ok(run_editable(["xce-init", "site"], tmp_path, env), 1)
    assert f"site: {expected}" in out
    assert "nothing was written" in out
    assert not (tmp_path / "site").exists()
    assert list(staging.iterdir()) == []  # the staging folder is gone too
