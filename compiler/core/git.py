"""The git revision of the site-config (gitpython), recorded so a plan names what it came from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import git


@dataclass(frozen=True, slots=True)
class Revision:
    commit: str | None
    dirty: bool


def site_revision(site_dir: Path) -> Revision:
    """HEAD of the repository holding ``site_dir``, and whether the site folder has changes."""
    try:
        repo = git.Repo(site_dir, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
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
