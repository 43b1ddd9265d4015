"""``xce-plan --base REV``: the config diff of the site being planned against a git revision.

The repository is the one holding the site folder. The base is read from its object store
(``compiler.site_repo.site_at``), so a CI clone needs the base commit, not a checkout of it; a clone
that lacks it (a shallow ``actions/checkout``) is a clear error saying how to fetch it. The
head is what the plan plans: the desired map compiled from the folder, and its allowlists.
"""

from __future__ import annotations

import datetime
import re
from pathlib import Path
from typing import Any

import git

from compiler.contract.supply_map import SupplyMap
from compiler.core.git import find_commit, is_shallow, repository, top, work_tree_of
from compiler.core.problems import Problems, UserError
from compiler.policy.compile import compile_policies, locate_policies
from compiler.policy.gitsource import inside
from compiler.policy.site import load_site_policy_files
from compiler.site_repo.config_diff import ConfigDiff, config_diff
from compiler.site_repo.site_at import compile_site_at, same_tree
from reconciler.plan import codes


def _repository(site_dir: Path) -> git.Repo:
    top_dir = work_tree_of(site_dir)
    repo = None if top_dir is None else repository(top_dir, parents=False)
    if repo is None:
        raise UserError([codes.problem(
            codes.BASE_NOT_IN_GIT, f"the site folder {site_dir} is not in a git repository: "
            "--base compares it with a revision of its repository", str(site_dir))])
    return repo


def _fetch_hint(repo: git.Repo, rev: str) -> str:
    """How to get ``rev`` into this clone: a CI checkout fetches one commit by default. A
    revision that names no commit however fetched (``HEAD:path``, ``@{-1}``, ``-x``) is
    told what to give instead."""
    if ":" in rev or "@{" in rev or rev.startswith("-"):
        return ("give a commit, branch or tag, e.g. origin/main: 'REV:PATH' names a file or "
                "folder, '@{...}' this clone's reflog, and a revision never starts with '-'")
    remote, _, branch = rev.partition("/")
    branch = re.split(r"[~^@:]", branch)[0]  # origin/main~3 is fetched with main
    fetch = (f"git fetch {remote} {branch}" if branch and remote in {r.name for r in repo.remotes}
             else f"git fetch origin {rev}")
    if is_shallow(repo):
        return (f"fetch the history: fetch-depth: 0 in actions/checkout (GitLab: GIT_DEPTH: 0), "
                f"or {fetch}")
    return f"check the name (git branch -a lists the branches), or fetch it: {fetch}"


def base_commit(repo: git.Repo, rev: str) -> git.Commit:
    """The commit ``rev`` names; XCE741, saying whether the clone is shallow, if absent."""
    commit = find_commit(repo, rev)
    if commit is None:
        shallow = " (a shallow clone: the history was not fetched)" if is_shallow(repo) else ""
        raise UserError([codes.problem(
            codes.BASE_NOT_FOUND, f"the base revision '{rev}' is not in the repository "
            f"{repo.working_tree_dir}{shallow}", rev, _fetch_hint(repo, rev))])
    return commit


def _outside(repo: git.Repo, policies: Path | None) -> str | None:
    """The note for ``--policies`` outside the repository: it has no base revision, so the
    allowlists are not compared."""
    if policies is None or policies.resolve().is_relative_to(top(repo).resolve()):
        return None
    return (f"the policies folder {policies} is not in the site's repository, so it has no "
            "base revision: the opcodes are not compared")


def _allowlists_here(site_dir: Path, policies: Path | None,
                     today: datetime.date) -> dict[str, Any]:
    """The head's allowlists, as the compile of the plan built them (it keeps only the map)."""
    problems = Problems()
    files = load_site_policy_files(site_dir, problems)
    return compile_policies(locate_policies(site_dir, policies), files, problems,
                            today).document


def _unchanged(repo: git.Repo, commit: git.Commit, folder: str, desired: SupplyMap) -> bool:
    """The site folder is clean and its tree at HEAD is the base's: the same files, so the
    same map, and the base need not be compiled (a change of policies or CI files only)."""
    if desired.revision is None or desired.dirty:
        return False
    head = find_commit(repo, desired.revision)
    return head is not None and same_tree(head, commit, folder)


def _head_label(supply: SupplyMap) -> str:
    if supply.revision is None or supply.dirty:
        return "the working tree"
    return supply.revision[:12]


def against_base(site_dir: Path, rev: str, policies: Path | None,
                 desired: SupplyMap) -> ConfigDiff:
    """What the site folder's config changes against ``rev``; ``desired`` is its map."""
    repo = _repository(site_dir)
    commit = base_commit(repo, rev)
    folder = inside(repo, str(site_dir.resolve()))
    outside = _outside(repo, policies)
    given = None if policies is None or outside else inside(repo, str(policies.resolve()))
    today = datetime.date.today()
    known = desired if _unchanged(repo, commit, folder, desired) else None
    base = compile_site_at(repo, commit, folder, given, today, allowlists=outside is None,
                           known=known)
    head = None if outside else _allowlists_here(site_dir, policies, today)
    return config_diff(base, rev, desired, head, _head_label(desired),
                       () if outside is None else (outside,))
