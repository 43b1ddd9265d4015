"""The site as it was at a git revision, compiled straight from the object store.

``xce-plan --base REV`` compares the desired map it plans with the one of the base revision
(a pull request's target branch). Nothing is checked out: the files are read from the
commit's tree, the same files the folder loader reads (``yaml_source.not_site_config``,
through ``git_tree.yaml_blobs``), so it works in any clone that holds the base commit.
A base that does not compile is data here (its problems), never an exception.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

import git

from compiler.compile import compile_files
from compiler.contract.supply_map import SupplyMap
from compiler.core.git import tree_at
from compiler.core.problems import Problem, Problems
from compiler.policy.gitsource import compile_at
from compiler.source.git_tree import yaml_blobs
from compiler.source.yaml_source import SITE_POLICIES, Locator, SourceFile, load_bytes


@dataclass(frozen=True, slots=True)
class SiteAt:
    """The desired map and allowlists at one commit.

    ``supply`` is None when the site does not compile there (``problems`` say why) or has
    no YAML file there (``present`` is False: the site is new). The allowlists are built
    from what is valid, as ``xce-policy review`` compares them; None when they were not
    read (``policies`` says why)."""

    commit: str
    folder: str
    present: bool
    supply: SupplyMap | None
    allowlists: dict[str, Any] | None
    problems: tuple[Problem, ...]
    policies: str


def load_blobs(blobs: dict[str, bytes], problems: Problems) -> tuple[list[SourceFile],
                                                                     dict[str, str]]:
    """The files that load, and every text, for a ``Locator`` to place their problems."""
    files: list[SourceFile] = []
    texts: dict[str, str] = {}
    for path, data in blobs.items():
        source = load_bytes(data, path, problems)
        if source is not None:
            files.append(source)
            texts[path] = data.decode("utf-8")
    return files, texts


def same_tree(a: git.Commit, b: git.Commit, folder: str) -> bool:
    """``folder`` holds the same files in both commits (git's tree ids are equal)."""
    tree_a, tree_b = tree_at(a, folder), tree_at(b, folder)
    return tree_a is not None and tree_b is not None and tree_a.hexsha == tree_b.hexsha


def compile_site_at(repo: git.Repo, commit: git.Commit, folder: str, policies: str | None,
                    today: datetime.date, *, allowlists: bool = True,
                    known: SupplyMap | None = None) -> SiteAt:
    """Compile ``folder`` (relative to the top of the repository) as it is in ``commit``,
    and its allowlists (unless told not to) with ``policies``: a folder in the repository,
    or None for the one the revision's own tree has (``choose_policies``). ``known`` is the
    map when the caller has it already (the folder's files are the ones it compiled)."""
    problems = Problems()
    texts: dict[str, str] = {}
    supply, present = known, True
    if known is None:
        blobs = yaml_blobs(commit, folder, skip=SITE_POLICIES)
        files, texts = load_blobs(blobs, problems)
        compiled = compile_files(files, problems, not problems.has_errors, today) \
            if files else None
        supply, present = None if compiled is None else compiled.supply_map, bool(blobs)
    document: dict[str, Any] | None = None
    where = "not read"
    if allowlists:
        build = compile_at(repo, commit.hexsha, policies, folder, today)
        texts.update(build.texts)
        document, where = build.document, build.policies
        seen = set(problems)  # a file that does not load is reported by both compiles
        problems.extend(p for p in build.problems if p not in seen)
    located = Locator(texts=texts).locate_all(problems)
    return SiteAt(commit.hexsha, folder, present, supply, document, tuple(located), where)
