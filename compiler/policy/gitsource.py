"""Compiling the policies as they were at a git revision, straight from the object store.

No checkout and no working-tree access: blobs are read from the commit's tree, so the
review works in a shallow CI clone as long as both revisions' commits were fetched.
Site files are only parsed if they mention ``policy`` or ``proxies`` (a 100,000-host
site-config is mostly host lists the policies never read).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import git
from git.exc import BadName, BadObject, InvalidGitRepositoryError, NoSuchPathError

from compiler.policy.compile import POLICY_FILES, compile_sources, missing_file
from compiler.policy.site import mentions_site_policy
from compiler.problems import Problem, Problems, UserError
from compiler.yaml_source import YAML_SUFFIXES, SourceFile, load_bytes


@dataclass(frozen=True, slots=True)
class RevisionBuild:
    """The allowlists compiled at one revision, with the texts its problems point into."""

    rev: str
    commit: str
    document: dict[str, Any]
    problems: Problems
    texts: dict[str, str] = field(default_factory=dict)


def open_repo(path: Path | None) -> git.Repo:
    try:
        return git.Repo(path or Path.cwd(), search_parent_directories=path is None)
    except (InvalidGitRepositoryError, NoSuchPathError):
        where = str(path or Path.cwd())
        raise UserError(
            [
                Problem(
                    "XCE660",
                    f"not a git repository: {where}",
                    "run inside the policy repository or pass --repo",
                )
            ]
        ) from None


def resolve_commit(repo: git.Repo, rev: str) -> git.Commit:
    try:
        return repo.commit(rev)
    except (BadName, BadObject, ValueError):
        shallow = Path(repo.git_dir, "shallow").exists()
        hint = (
            f"this is a shallow clone: fetch the revision first, e.g. "
            f"'git fetch --depth=1 origin {rev}'"
            if shallow
            else "check the name, or fetch it from the remote"
        )
        raise UserError([Problem("XCE661", f"revision '{rev}' not found", hint)]) from None


def inside(repo: git.Repo, path: str) -> str:
    """A folder as git names it: options are relative to the top of the repository, and an
    absolute path inside its work tree is accepted too."""
    folder = Path(path)
    if folder.is_absolute():
        top = Path(repo.working_tree_dir or repo.git_dir).resolve()
        try:
            folder = folder.resolve().relative_to(top)
        except ValueError:
            raise UserError(
                [
                    Problem(
                        "XCE662",
                        f"'{path}' is not inside the repository {top}",
                        "give --policies and --site relative to the repository's top folder",
                    )
                ]
            ) from None
    return PurePosixPath(folder.as_posix()).as_posix()


def yaml_blobs(commit: git.Commit, folder: str) -> dict[str, bytes]:
    """Repository path -> bytes of every YAML file under ``folder`` (skipping hidden ones)."""
    try:
        tree = commit.tree if folder == "." else commit.tree / folder
    except KeyError:
        return {}
    if not isinstance(tree, git.Tree):
        return {}
    out: dict[str, bytes] = {}
    top = PurePosixPath(str(tree.path))
    for item in tree.traverse():
        if not isinstance(item, git.Blob) or not str(item.path).endswith(YAML_SUFFIXES):
            continue
        path = str(item.path)
        if any(part.startswith(".") for part in PurePosixPath(path).relative_to(top).parts):
            continue
        out[path] = item.data_stream.read()
    return dict(sorted(out.items()))


def compile_at(
    repo: git.Repo, rev: str, policies: str, site: str, today: datetime.date
) -> RevisionBuild:
    commit = resolve_commit(repo, rev)
    problems = Problems()
    texts: dict[str, str] = {}

    def load(path: str, data: bytes) -> SourceFile | None:
        source = load_bytes(data, path, problems)
        if source is not None:
            texts[path] = data.decode("utf-8")
        return source

    policies, site = inside(repo, policies), inside(repo, site)
    blobs = yaml_blobs(commit, policies)
    files: dict[str, SourceFile] = {}
    for name in POLICY_FILES:
        path = name if policies == "." else f"{policies}/{name}"
        if path not in blobs:
            missing_file(path, problems)
        elif (source := load(path, blobs[path])) is not None:
            files[name] = source
    site_files = [
        source
        for path, data in yaml_blobs(commit, site).items()
        if mentions_site_policy(data) and (source := load(path, data)) is not None
    ]
    document = compile_sources(files, site_files, problems, today)
    return RevisionBuild(rev, commit.hexsha, document, problems, texts)
