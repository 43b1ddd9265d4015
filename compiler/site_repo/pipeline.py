"""The pipeline files of a site-config repository (docs/ci.md): GitHub's workflow, GitLab's
pipeline and the pre-commit hook's configuration, rendered from the package's templates with
the installed xce-gitops pinned, so a pipeline installs the release that wrote it.

The values written into them (the site folder, the branch) are checked to be plain names:
they end up in YAML and in the environment of shell scripts, and a pipeline file is code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import PurePosixPath

import jinja2

from compiler.cli.runner import product_version
from compiler.core.problems import Problem, UserError
from compiler.site_repo import codes

# xce-init --ci: the CI whose pipeline file is written (none: only the pre-commit config)
CI_KINDS = ("github", "gitlab", "none")
# xce-init --print-ci: the files it prints
PRINTABLE = ("github", "gitlab", "pre-commit")
# each file: where it goes in the repository, and its template
PATHS = {
    "github": ".github/workflows/xce-gitops.yml",
    "gitlab": ".gitlab-ci.yml",
    "pre-commit": ".pre-commit-config.yaml",
}
TEMPLATES = {
    "github": "ci/github-workflow.yml.j2",
    "gitlab": "ci/gitlab-ci.yml.j2",
    "pre-commit": "ci/pre-commit-config.yaml.j2",
}
DEFAULT_BRANCH = "main"
# xce-init --hook: how the pre-commit hook gets xce-compile (docs/ci.md, "The pre-commit hook"):
# python installs the pinned release from the package index into pre-commit's own environment;
# system runs the xce-compile installed where the admin commits (a site that installs wheels)
HOOKS = ("python", "system")
DEFAULT_HOOK = "python"
_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/-]*")


@cache
def environment() -> jinja2.Environment:
    """xce-init's templates; a variable a template lacks is an error, never an empty string
    in a written file."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("compiler.site_repo", "templates"),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


@dataclass(frozen=True, slots=True)
class Pipeline:
    """What the pipeline files say: which CI, the site folder (relative to the repository's
    top), the branch that is applied, whether the nightly drift check mails, and how the
    pre-commit hook gets xce-compile (HOOKS)."""

    ci: str = "github"
    site: str = "."
    branch: str = DEFAULT_BRANCH
    notify: bool = False
    hook: str = DEFAULT_HOOK

    def context(self) -> dict[str, object]:
        return {
            "ci": self.ci,
            "ci_file": PATHS.get(self.ci, ""),
            "version": product_version(),
            "site": self.site,
            "branch": self.branch,
            "notify": self.notify,
            "hook": self.hook,
        }

    def files(self) -> dict[str, str]:
        """What xce-init writes: output path -> template."""
        kinds = [*([] if self.ci == "none" else [self.ci]), "pre-commit"]
        return {PATHS[kind]: TEMPLATES[kind] for kind in kinds}

    def render(self, kind: str) -> str:
        """One file (a PRINTABLE kind) as xce-init writes it."""
        return environment().get_template(TEMPLATES[kind]).render(self.context())


def site_folder(given: str) -> str:
    """``--site``: a folder inside the repository, written as a relative path."""
    folder = str(PurePosixPath(given))
    if folder == "." or (_PLAIN.fullmatch(folder) and ".." not in PurePosixPath(folder).parts):
        return folder
    raise UserError([Problem(
        codes.BAD_SITE_FOLDER,
        f"--site '{given}' is not a folder inside the repository written plainly",
        "give the site folder relative to the repository's top, of letters, digits, '.', "
        "'_', '-' and '/', without '..' (such as . or site-config)",
        subject="--site",
    )])


def branch_name(given: str, source: str) -> str:
    """The branch the pipeline applies (``source`` says where the name came from)."""
    if _PLAIN.fullmatch(given) and ".." not in given:
        return given
    raise UserError([Problem(
        codes.BAD_BRANCH,
        f"the branch '{given}' ({source}) is not a plain branch name",
        "use a branch name of letters, digits, '.', '_', '-' and '/' (such as main)",
        subject=source,
    )])
