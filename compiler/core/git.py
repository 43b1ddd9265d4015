"""Git, one way (gitpython): the repository holding a folder, its top and branch, the commit a
revision names, what a commit's tree holds, and the revision a plan names.

Every command reaches git through these, so a folder outside any repository, a revision
that is not there and a path a tree does not hold each read the same everywhere: as None
(or "" for a branch), for the caller to say what that means for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import git
from git.exc import BadName, BadObject


def repository(path: Path, *, parents: bool = True) -> git.Repo | None:
    """The repository at ``path`` (with ``parents``: the one holding it), or None."""
    try:
        return git.Repo(path, search_parent_directories=parents)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None


def top(repo: git.Repo) -> Path:
    """The top folder of the repository's work tree (its git folder when it has none)."""
    return Path(repo.working_tree_dir or repo.git_dir)


def work_tree_of(path: Path) -> Path | None:
    """The top folder of the git work tree holding ``path`` (or, when it does not exist, its
    nearest existing parent), if it is in one."""
    existing = next((p for p in (path, *path.absolute().parents) if p.is_dir()), path)
    repo = repository(existing)
    top_dir = None if repo is None else repo.working_tree_dir
    return Path(top_dir) if top_dir else None


def branch_of(path: Path) -> str:
    """The branch checked out in the repository holding ``path``; "" on a detached HEAD (a
    CI checkout) or outside git."""
    repo = repository(path)
    try:
        return "" if repo is None else repo.active_branch.name
    except (TypeError, ValueError):
        return ""


def find_commit(repo: git.Repo, rev: str) -> git.Commit | None:
    """The commit ``rev`` names; None when the repository does not have it (not fetched),
    or it names no commit (``HEAD:path``, ``@{-1}`` with no branch before). git reads the
    revision, all of its syntax (GitPython's own reader fails inside on ``@{-1}``,
    ``HEAD@{yesterday}``, ``HEAD:../x``); ``--end-of-options``: never an option."""
    try:
        sha = repo.git.rev_parse("--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
        return repo.commit(sha.strip())
    except (git.GitCommandError, BadName, BadObject, ValueError):
        return None


def is_shallow(repo: git.Repo) -> bool:
    """A clone made with ``--depth``: older commits may be missing."""
    return Path(repo.git_dir, "shallow").exists()


def tree_at(commit: git.Commit, folder: str) -> git.Tree | None:
    """The folder ``folder`` (``.`` for the top) as ``commit`` holds it; None if it holds
    no such folder."""
    try:
        found = commit.tree if folder == "." else commit.tree / folder
    except KeyError:
        return None
    return found if isinstance(found, git.Tree) else None


def blob_at(commit: git.Commit, path: str) -> git.Blob | None:
    """The file ``path`` as ``commit`` holds it; None if it holds no such file."""
    try:
        found = commit.tree / path
    except KeyError:
        return None
    return found if isinstance(found, git.Blob) else None


@dataclass(frozen=True, slots=True)
class Revision:
    commit: str | None
    dirty: bool


def site_revision(site_dir: Path) -> Revision:
    """HEAD of the repository holding ``site_dir``, and whether the site folder has changes
    (recorded so a plan names what it came from)."""
    repo = repository(site_dir)
    if repo is None:
        return Revision(None, False)
    try:
        commit: str | None = repo.head.commit.hexsha
    except ValueError:  # a repository with no commit yet
        commit = None
    try:
        rel = str(site_dir.resolve().relative_to(Path(repo.working_tree_dir or ".").resolve()))
        dirty = repo.is_dirty(untracked_files=True, path=rel)
    except (ValueError, git.GitCommandError):
        dirty = True
    return Revision(commit, dirty)
