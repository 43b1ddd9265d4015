"""Issue 20 §5: ``xce-plan --as-of`` and ``--base`` as a user may type them.

``--as-of +99999999999999d`` is a duration the grammar accepts but no plan can print (past
the year 9999); ``--base`` takes git's own revision syntax, which GitPython's reader
failed inside on (``@{-1}``, ``HEAD@{yesterday}``, ``HEAD:../x``). Each is a usage error
or a missing base (exit 1, with the value), never an internal error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.core.git import find_commit
from compiler.core.problems import UserError
from reconciler.cmds.plan import main as plan_main
from reconciler.pipeline import compile_desired
from reconciler.plan import codes
from reconciler.review.config_base import against_base
from tests.apply.small_site import write_site
from tests.policy.gitrepo import PolicyRepo


@pytest.mark.parametrize("when", [
    "+99999999999999d",  # the grammar's, but past the year 9999
    "+9223372036854775807s",  # the largest duration
    "9999-12-31T23:00:00-05:00",  # 10000-01-01 in UTC
    "0001-01-01T00:00:00+01:00",  # before the year 1 in UTC
])
def test_an_instant_no_plan_can_print(when: str, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    site = write_site(tmp_path / "site")
    assert plan_main([str(site), "--as-of", when]) == 1
    err = capsys.readouterr().err
    assert f"argument --as-of: {when!r} is no time to plan for: it is past the year 9999" in err
    assert "internal error" not in err


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> PolicyRepo:
    handle = PolicyRepo(tmp_path_factory.mktemp("base") / "repo", with_policies=False)
    write_site(handle.path / "site")
    handle.base = handle.commit("the site")
    return handle


NOT_A_COMMIT = [
    "@{-1}",  # no branch was checked out before
    "HEAD:../../etc/passwd",  # a path outside the repository
    "HEAD:site",  # a tree, not a commit
    "--output=x",  # never an option of git's
    "HEAD@{99}",  # no such reflog entry
    "main\nHEAD",
]


@pytest.mark.parametrize("rev", NOT_A_COMMIT)
def test_a_base_that_names_no_commit(rev: str, repo: PolicyRepo) -> None:
    site = repo.path / "site"
    with pytest.raises(UserError) as raised:
        against_base(site, rev, None, compile_desired(site).supply)
    (problem,) = raised.value.problems
    assert problem.code == codes.BASE_NOT_FOUND
    assert problem.message.startswith(f"the base revision '{rev}' is not in the repository")
    assert not (repo.path / "x").exists()
    if rev != "main\nHEAD":
        assert problem.hint.startswith("give a commit, branch or tag") == (":" in rev or "@{" in rev
                                                                           or rev[0] == "-")


@pytest.mark.parametrize("rev", ["HEAD@{0}", "main~0", "HEAD^{commit}", "HEAD@{yesterday}"])
def test_git_syntax_that_names_a_commit(rev: str, repo: PolicyRepo) -> None:
    """git reads the revision: ``@{n}``, ``^{}`` and reflog dates included (the reflog
    of a repository made today goes back to its first commit)."""
    found = find_commit(repo.repo, rev)
    first = repo.repo.git.rev_list("--max-parents=0", "HEAD")
    assert found is not None and found.hexsha == (first if "yesterday" in rev else repo.base)


def test_xce_plan_base_is_a_clear_error(repo: PolicyRepo, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert plan_main([str(repo.path / "site"), "--base", "@{-1}"]) == 1
    err = capsys.readouterr().err
    assert "error[XCE741]: the base revision '@{-1}' is not in the repository" in err
    assert "internal error" not in err
