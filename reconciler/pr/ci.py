"""Which CI runs the job, and what it tells xce-pr: the API's address, the token, the
repository and the pull request. Read from the CI's own variables, so a pipeline passes
nothing but the files; a missing variable is named with what sets it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from compiler.core.file_io import TEXT_CAP, Refused, read_input
from compiler.core.problems import UserError
from reconciler.pr.codes import CI_SETTINGS, HINTS, NO_PULL

GITHUB, GITLAB = "github", "gitlab"
GITHUB_API = "https://api.github.com"
_REPOSITORY = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Settings:
    """One forge's settings for this job. ``token`` is never shown (not even in a repr)."""

    forge: str
    api_url: str
    repo: str  # GitHub owner/name; GitLab the project id (or its path)
    token: str = field(repr=False)
    token_variable: str  # where the token came from: GITHUB_TOKEN, XCE_GITLAB_TOKEN, …
    environ: Mapping[str, str] = field(repr=False, compare=False)

    @property
    def job_token(self) -> bool:
        """GitLab's CI_JOB_TOKEN, which the notes API does not accept."""
        return self.token_variable == "CI_JOB_TOKEN"


def detect(environ: Mapping[str, str], ci: str | None) -> Settings:
    """The forge's settings: the one asked for with ``--ci``, else the CI this job runs in."""
    if ci is None:
        if environ.get("GITHUB_ACTIONS") == "true":
            ci = GITHUB
        elif environ.get("GITLAB_CI") == "true":
            ci = GITLAB
        else:
            raise _problem("not running in GitHub Actions or GitLab CI: neither GITHUB_ACTIONS "
                           "nor GITLAB_CI is 'true'", "run it in the CI job, or pass --ci "
                           "github|gitlab and set the variables docs/pull-requests.md lists")
    return _github(environ) if ci == GITHUB else _gitlab(environ)


def _github(environ: Mapping[str, str]) -> Settings:
    api = _url(environ, "GITHUB_API_URL", GITHUB_API)
    repo = _needed(environ, "GITHUB_REPOSITORY", "GitHub Actions sets it in every job")
    if not _REPOSITORY.fullmatch(repo):
        raise _problem(f"GITHUB_REPOSITORY is {repo!r}, not owner/name",
                       "leave it as GitHub Actions sets it, or set it to owner/name")
    token = _needed(environ, "GITHUB_TOKEN", "GitHub Actions does not put the token in the "
                    "environment by itself: add `GITHUB_TOKEN: ${{ github.token }}` to the "
                    "step's env, and `permissions: pull-requests: write` to the job")
    return Settings(GITHUB, api, repo, token, "GITHUB_TOKEN", environ)


def _gitlab(environ: Mapping[str, str]) -> Settings:
    api = _url(environ, "CI_API_V4_URL", None)
    project = _needed(environ, "CI_PROJECT_ID", "GitLab CI sets it in every job")
    for name in ("XCE_GITLAB_TOKEN", "CI_JOB_TOKEN"):
        if environ.get(name):
            return Settings(GITLAB, api, project, environ[name], name, environ)
    raise _problem("neither XCE_GITLAB_TOKEN nor CI_JOB_TOKEN is set",
                   "create a project access token with the api scope and store it as a masked "
                   "CI/CD variable XCE_GITLAB_TOKEN (CI_JOB_TOKEN cannot write comments)")


def pull_from_environment(settings: Settings) -> int:
    """The pull request this job runs for, as the CI says (GitHub: the event file's
    ``pull_request.number``; GitLab: ``CI_MERGE_REQUEST_IID``)."""
    environ = settings.environ
    if settings.forge == GITLAB:
        iid = environ.get("CI_MERGE_REQUEST_IID", "")
        if not iid.isdigit():
            raise UserError([HINTS.problem(
                NO_PULL, "this job is not part of a merge request pipeline: CI_MERGE_REQUEST_IID "
                "is not set", "xce-pr", "run the job in merge request pipelines (rules: - if: "
                "$CI_PIPELINE_SOURCE == \"merge_request_event\"), or pass --pr N or --commit SHA")])
        return int(iid)
    path = _needed(environ, "GITHUB_EVENT_PATH", "GitHub Actions sets it in every job")
    try:
        event = json.loads(read_input(path, TEXT_CAP))
    except (OSError, ValueError, Refused) as err:
        raise _problem(f"GITHUB_EVENT_PATH {path} cannot be read as the event's JSON ({err})",
                       "leave it as GitHub Actions sets it, or pass --pr N") from None
    number = _event_number(event)
    if number is None:
        name = environ.get("GITHUB_EVENT_NAME") or "this event"
        raise UserError([HINTS.problem(
            NO_PULL, f"the workflow runs on {name}, not on a pull request: its event has no "
            "pull_request.number", "xce-pr", "run the job on: pull_request, or pass --pr N, or "
            "--commit SHA to find the pull request of a commit")])
    return number


def _event_number(event: object) -> int | None:
    """``pull_request.number``, or an issue comment's ``issue.number`` on a pull request."""
    if not isinstance(event, dict):
        return None
    pull, issue = event.get("pull_request"), event.get("issue")
    if isinstance(pull, dict) and isinstance(pull.get("number"), int):
        return int(pull["number"])
    if isinstance(issue, dict) and "pull_request" in issue and isinstance(issue.get("number"),
                                                                           int):
        return int(issue["number"])
    return None


def _needed(environ: Mapping[str, str], name: str, what_sets_it: str) -> str:
    value = environ.get(name, "").strip()
    if not value:
        raise _problem(f"{name} is not set", what_sets_it)
    return value


def _url(environ: Mapping[str, str], name: str, default: str | None) -> str:
    """The API's base URL, without a trailing slash; only http(s) with a host."""
    value = environ.get(name, "").strip() or default
    if value is None:
        raise _problem(f"{name} is not set", "GitLab CI sets it in every job (GitLab 11.7 and "
                       "later), e.g. https://gitlab.example.org/api/v4")
    parts = urlsplit(value)
    example = GITHUB_API if name.startswith("GITHUB") else "https://HOST/api/v4"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _problem(f"{name} is not the http(s) address of an API (scheme "
                       f"{parts.scheme!r}, host {parts.hostname or ''!r})",
                       f"set {name} to the API's address, e.g. {example}")
    if parts.username is not None or parts.password is not None:
        raise _problem(f"{name} holds a user name or password (not shown)",
                       f"give the address alone, e.g. {example}; the token goes in its own "
                       "variable")
    return value.rstrip("/")


def _problem(message: str, hint: str) -> UserError:
    return UserError([HINTS.problem(CI_SETTINGS, message, "xce-pr", hint)])
