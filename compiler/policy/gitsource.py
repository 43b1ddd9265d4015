"""Compiling the policies as they were at a git revision, straight from the object store.

No checkout and no working-tree access: blobs are read from the commit's tree
(``compiler.source.git_tree``), so the review works in a shallow CI clone as long as both
revisions' commits were fetched. Git itself is reached through ``compiler.core.git``; what
is here is the policy review's: its repository and revision errors, and the compile.
Site files are only parsed if they mention ``policy`` or ``proxies`` (a 100,000-host
site-config is mostly host lists the policies never read). A revision without a policy
folder compiles with the policies bundled with the installed package.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import git

from compiler.core.git import find_commit, is_shallow, repository, top, tree_at
from compiler.core.problems import Problem, Problems, UserError
from compiler.policy import codes
from compiler.policy.compile import (
    POLICY_FILES,
    PolicySource,
    choose_policies,
    compile_sources,
    missing_file,
)
from compiler.policy.site import mentions_site_policy
from compiler.source.git_tree import yaml_blobs
from compiler.source.yaml_source import SITE_POLICIES, SourceFile, display_path, load_bytes


@dataclass(frozen=True, slots=True)
class RevisionBuild:
    """The allowlists compiled at one revision, with the texts its problems point into."""

    rev: str
    commit: str
    document: dict[str, Any]
    problems: Problems
    texts: dict[str, str] = field(default_factory=dict)
    policies: str = ""  # where they came from: "policies/", "the policies bundled with ..."


def open_repo(path: Path | None) -> git.Repo:
    """The repository ``--repo`` names, else the one holding the working folder."""
    repo = repository(path or Path.cwd(), parents=path is None)
    if repo is None:
        where = str(path or Path.cwd())
        raise UserError(
            [
                Problem(
                    codes.NOT_A_REPOSITORY,
                    f"not a git repository: {where}",
                    "run inside the policy repository or pass --repo",
                )
            ]
        )
    return repo


def resolve_commit(repo: git.Repo, rev: str) -> git.Commit:
    commit = find_commit(repo, rev)
    if commit is None:
        hint = (
            f"this is a shallow clone: fetch the revision first, e.g. "
            f"'git fetch --depth=1 origin {rev}'"
            if is_shallow(repo)
            else "check the name, or fetch it from the remote"
        )
        raise UserError([Problem(codes.UNKNOWN_REVISION, f"revision '{rev}' not found",
                                 hint)])
    return commit


def inside(repo: git.Repo, path: str) -> str:
    """A folder as git names it: options are relative to the top of the repository, and an
    absolute path inside its work tree is accepted too."""
    folder = Path(path)
    if folder.is_absolute():
        top_dir = top(repo).resolve()
        try:
            folder = folder.resolve().relative_to(top_dir)
        except ValueError:
            raise UserError(
                [
                    Problem(
                        codes.BAD_FOLDER,
                        f"'{path}' is not inside the repository {top_dir}",
                        "give --policies and --site relative to the repository's top folder",
                    )
                ]
            ) from None
    return PurePosixPath(folder.as_posix()).as_posix()


def _join(folder: str, name: str) -> str:
    return name if folder == "." else f"{folder}/{name}"


def policy_blobs(commit: git.Commit, origin: PolicySource) -> dict[str, tuple[str, bytes | None]]:
    """Each policy file's path as problems show it, and its bytes (None: it is missing)."""
    if origin.bundled:
        local = {name: origin.folder / name for name in POLICY_FILES}
        return {
            name: (display_path(path), path.read_bytes() if path.is_file() else None)
            for name, path in local.items()
        }
    folder = origin.folder.as_posix()
    blobs = yaml_blobs(commit, folder)
    paths = {name: _join(folder, name) for name in POLICY_FILES}
    return {name: (path, blobs.get(path)) for name, path in paths.items()}


def compile_at(
    repo: git.Repo, rev: str, policies: str | None, site: str, today: datetime.date
) -> RevisionBuild:
    """The allowlists at ``rev``, with ``policies`` or the folder ``choose_policies`` finds
    in that revision's tree (paths relative to the top of the repository)."""
    commit = resolve_commit(repo, rev)
    problems = Problems()
    texts: dict[str, str] = {}

    def load(path: str, data: bytes) -> SourceFile | None:
        source = load_bytes(data, path, problems)
        if source is not None:
            texts[path] = data.decode("utf-8")
        return source

    site = inside(repo, site)
    given = None if policies is None else Path(inside(repo, policies))
    origin = choose_policies(
        Path(site), Path("."), given, lambda folder: tree_at(commit, folder.as_posix()) is not None
    )
    files: dict[str, SourceFile] = {}
    for name, (path, data) in policy_blobs(commit, origin).items():
        if data is None:
            missing_file(path, origin, problems)
        elif (source := load(path, data)) is not None:
            files[name] = source
    site_files = [
        source
        for path, data in yaml_blobs(commit, site, skip=SITE_POLICIES).items()
        if mentions_site_policy(data) and (source := load(path, data)) is not None
    ]
    document = compile_sources(files, site_files, problems, today)
    where = origin.describe() if origin.bundled else f"{origin.folder.as_posix()}/"
    return RevisionBuild(rev, commit.hexsha, document, problems, texts, where)
