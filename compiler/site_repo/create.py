"""Making a new site-config repository: files from templates, its pipeline files, its first
snapshots, git.

Everything is made in a staging folder and moved into the target only when every step
succeeded: a failure leaves nothing behind, and the target is never half-written. The first
snapshots come from a real ``pytest --snapshot-update`` run of the new repository's own
tests, so they are exactly what the next ``pytest`` compares with, whatever syrupy's version.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import git
from pydantic import TypeAdapter, ValidationError

from compiler.core.bundled import example_site_dir
from compiler.core.problems import Problem, UserError
from compiler.core.types import Name
from compiler.site_repo import codes
from compiler.site_repo.pipeline import (
    DEFAULT_BRANCH,
    DEFAULT_HOOK,
    Pipeline,
    branch_name,
    environment,
)

# the small site's files, and the repository's own: output path -> template
SMALL_SITE = {
    "site.yaml": "site.yaml.j2",
    "hosts.yaml": "hosts.yaml.j2",
    "storage.yaml": "storage.yaml.j2",
    "providers.yaml": "providers.yaml.j2",
    "proxies.yaml": "proxies.yaml.j2",
    "policy.yaml": "policy.yaml.j2",
}
REPOSITORY = {
    ".gitignore": "gitignore.j2",
    "README.md": "README.md.j2",
    "pytest.ini": "pytest.ini.j2",
    "tests/test_policies.py": "test_policies.py.j2",
    "ci/README.md": "ci-README.md.j2",
}
SNAPSHOT = Path("tests", "__snapshots__", "test_policies.ambr")
EXAMPLE_SITE_NAME = "hpc-east"
FALLBACK_AUTHOR = ("xce-init", "xce-init@localhost")


@dataclass(frozen=True, slots=True)
class Created:
    """What ``scaffold`` made, for the command's summary."""

    target: Path
    site_name: str
    files: int
    commit: str


def _problem(code: str, message: str, hint: str, target: Path) -> UserError:
    return UserError([Problem(code, message, hint, subject=str(target))])


def check_target(target: Path) -> None:
    """A new folder, or an empty one; anything else is refused before a file is written."""
    try:
        if target.is_dir():
            found = sorted(p.name for p in target.iterdir())
        elif target.exists() or target.is_symlink():
            raise _problem(
                codes.CANNOT_CREATE,
                f"'{target}' exists and is not a folder",
                "give the path of a new folder, or of an empty one",
                target,
            )
        else:
            return
    except OSError as err:
        raise _problem(
            codes.CANNOT_CREATE,
            f"cannot read the folder '{target}': {err.strerror or err}",
            "give a folder you may read and write",
            target,
        ) from err
    if found:
        shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        raise _problem(
            codes.NOT_EMPTY,
            f"the folder '{target}' is not empty (it holds {shown}); xce-init never overwrites",
            "give a new or an empty folder; to publish the new repository, add its remote "
            "afterwards (git remote add origin URL)",
            target,
        )


def site_name_for(target: Path, given: str | None) -> str:
    """``--site-name``, else the target folder's name, checked as the language checks names."""
    name = given if given is not None else target.resolve().name
    try:
        return TypeAdapter(Name).validate_python(name)
    except ValidationError as err:
        reason = err.errors()[0]["msg"]
        hint = (
            "give a name of letters, digits, '.', '_' and '-'"
            if given is not None
            else "the site is named after its folder by default: pass --site-name NAME"
        )
        raise _problem(codes.BAD_SITE_NAME, f"site name {reason}", hint, target) from None


def render_templates(dest: Path, files: dict[str, str], site_name: str, example: bool,
                     pipeline: Pipeline | None = None) -> None:
    """Write each template's output; the repository's own files also say what ``pipeline``
    holds (the site's files need only the name)."""
    context = {"site_name": site_name, "example": example,
               **(pipeline.context() if pipeline else {})}
    for out, template in files.items():
        path = dest / out
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(environment().get_template(template).render(context), encoding="utf-8")


def copy_example(dest: Path) -> None:
    """The example site as shipped, without what running it leaves (its hidden workdir)."""
    shutil.copytree(
        example_site_dir(),
        dest,
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns(".*", "__pycache__", "build"),
    )


def write_snapshots(dest: Path, target: Path) -> None:
    """Run the new repository's tests once with ``--snapshot-update``, in a clean pytest
    environment (no inherited PYTEST_* settings, no byte code left behind)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--snapshot-update"]
    done = subprocess.run(command, cwd=dest, env=env, capture_output=True, text=True, check=False)
    if done.returncode or not (dest / SNAPSHOT).is_file():
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
        raise _problem(
            codes.SNAPSHOTS_FAILED,
            f"the first run of the new repository's tests failed (exit {done.returncode}):\n"
            f"{tail}",
            "check that pytest and syrupy are installed with xce-gitops and that no other "
            "pytest plugin of this environment fails; nothing was written",
            target,
        )


def _author(config: git.GitConfigParser) -> git.Actor:
    """The configured author (GIT_AUTHOR_*, git config user.*), else xce-init: a machine
    where git has no user yet still gets its first commit."""
    name = os.environ.get("GIT_AUTHOR_NAME") or config.get_value("user", "name", "")
    email = os.environ.get("GIT_AUTHOR_EMAIL") or config.get_value("user", "email", "")
    return git.Actor(str(name or FALLBACK_AUTHOR[0]), str(email or FALLBACK_AUTHOR[1]))


def _git_failure(err: Exception) -> str:
    """What git said, without gitpython's wrapping of it."""
    if isinstance(err, git.GitCommandError):
        said = str(err.stderr).strip().removeprefix("stderr:").strip().strip("'")
        return f"{' '.join(map(str, err.command))}: {said or f'exit {err.status}'}"
    return str(err) or type(err).__name__


@contextmanager
def _git_step(target: Path) -> Iterator[None]:
    """A failure of git is the user's XCE024, with what git said."""
    try:
        yield
    except (OSError, git.GitError) as err:
        raise _problem(
            codes.GIT_FAILED,
            f"git failed: {_git_failure(err)}",
            "check that git works here (git --version, its configuration); nothing was written",
            target,
        ) from None


def init_repository(dest: Path, target: Path) -> git.Repo:
    """``git init`` (branch main unless git is configured otherwise), first of all: the
    pipeline files name the branch."""
    with _git_step(target):
        repo = git.Repo.init(dest)
        if not repo.config_reader().get_value("init", "defaultBranch", ""):
            repo.git.symbolic_ref("HEAD", f"refs/heads/{DEFAULT_BRANCH}")
        return repo


def commit_all(repo: git.Repo, message: str, target: Path) -> tuple[str, int]:
    """One commit of every file that .gitignore does not ignore: its id, and how many files
    it holds."""
    with _git_step(target):
        repo.git.add(all=True)
        author = _author(repo.config_reader())
        commit = repo.index.commit(message, author=author, committer=author)
        return commit.hexsha, len(repo.git.ls_files().splitlines())


def move_into(staging: Path, target: Path) -> None:
    try:
        target.mkdir(parents=True, exist_ok=True)
        for child in sorted(staging.iterdir()):
            shutil.move(child, target / child.name)
    except OSError as err:
        raise _problem(
            codes.CANNOT_CREATE,
            f"cannot write the folder '{target}': {err.strerror or err}",
            "give a folder you may create and write",
            target,
        ) from err


def scaffold(target: Path, site_name: str | None, example: bool, ci: str = "github",
             hook: str = DEFAULT_HOOK) -> Created:
    """Make the repository in a staging folder, then move it into ``target``. Its pipeline
    files apply the branch git starts on; the example site mails its drift (it has
    ``drift.notify``), the small site does not."""
    check_target(target)
    name = EXAMPLE_SITE_NAME if example else site_name_for(target, site_name)
    with tempfile.TemporaryDirectory(prefix="xce-init-") as tmp:
        staging = Path(tmp)
        repo = init_repository(staging, target)
        branch = branch_name(repo.head.reference.name, "git config init.defaultBranch")
        pipeline = Pipeline(ci=ci, branch=branch, notify=example, hook=hook)
        if example:
            copy_example(staging)
        else:
            render_templates(staging, SMALL_SITE, name, example)
        render_templates(staging, {**REPOSITORY, **pipeline.files()}, name, example, pipeline)
        write_snapshots(staging, target)
        message = f"New site-config repository of site {name} (xce-init)"
        commit, files = commit_all(repo, message, target)
        move_into(staging, target)
    return Created(target, name, files, commit)
