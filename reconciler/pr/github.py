"""GitHub's REST API, as xce-pr uses it: a pull request's comments are its issue's comments
(``/repos/{owner}/{repo}/issues/{number}/comments``), listed 100 a page along the ``Link``
header; a commit's pull requests from ``/repos/{owner}/{repo}/commits/{sha}/pulls``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from reconciler.pr.ci import Settings
from reconciler.pr.forge import CLOSED, MERGED, OPEN, Comment, Pull
from reconciler.pr.http import Failure, JsonClient, link_next
from reconciler.pr.sticky import carries

API_VERSION = "2022-11-28"  # the REST API version these calls are written against
BODY_LIMIT = 65_536  # "body is too long (maximum is 65536 characters)"


class GitHub:
    label = "GitHub"
    body_limit = BODY_LIMIT

    def __init__(self, settings: Settings, timeout: float) -> None:
        self._settings = settings
        self._repo = "/".join(quote(part, safe="") for part in settings.repo.split("/"))
        headers = {"Authorization": f"Bearer {settings.token}",
                   "Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION}
        self.http = JsonClient("GitHub API", settings.api_url, headers, timeout=timeout,
                               secret=settings.token, explain=self._explain,
                               variable="GITHUB_API_URL")

    def find_comment(self, pull: int, marker: str) -> Comment | None:
        path = f"/repos/{self._repo}/issues/{pull}/comments"
        for item in self.http.pages(path, {"per_page": "100"}, link_next):
            if (isinstance(item, dict) and isinstance(item.get("body"), str)
                    and isinstance(item.get("id"), int) and carries(item["body"], marker)):
                return _comment(item)
        return None

    def create_comment(self, pull: int, body: str) -> Comment:
        reply = self.http.call("POST", f"/repos/{self._repo}/issues/{pull}/comments",
                               {"body": body})
        return _comment(self.http.need(reply, "POST", id=int, html_url=str))

    def update_comment(self, pull: int, comment: Comment, body: str) -> Comment:
        reply = self.http.call("PATCH", f"/repos/{self._repo}/issues/comments/{comment.id}",
                               {"body": body})
        return _comment(self.http.need(reply, "PATCH", id=int, html_url=str))

    def pulls_for_commit(self, sha: str) -> list[Pull]:
        path = f"/repos/{self._repo}/commits/{quote(sha, safe='')}/pulls"
        return [Pull(item["number"], MERGED if item.get("merged_at") else
                     OPEN if item.get("state") == "open" else CLOSED, str(item.get("html_url")))
                for item in self.http.pages(path, {"per_page": "100"}, link_next)
                if isinstance(item, dict) and isinstance(item.get("number"), int)]

    def _explain(self, failure: Failure) -> str:
        """GitHub's refusals, with the setting that fixes each."""
        if failure.status == 401:
            return ("GITHUB_TOKEN is wrong or has expired (a job's token lasts only while the "
                    "job runs): set `GITHUB_TOKEN: ${{ github.token }}` in the step's env")
        if failure.status == 403 and "rate limit" in failure.said.lower():
            return "the token's API rate limit is used up: run the job again later"
        if failure.status == 403:
            return ("the job's token may not write pull-request comments: give the job "
                    "`permissions: pull-requests: write`. A pull_request from a fork gets a "
                    "read-only token whatever the workflow asks (docs/pull-requests.md)")
        if failure.status == 404:
            return (f"check GITHUB_REPOSITORY ({self._settings.repo}) and the pull request's "
                    "number (--pr, --commit or the event); GitHub answers 404 also when the "
                    "token may not see the repository")
        if failure.status >= 500:
            return "GitHub is failing (https://www.githubstatus.com): run the job again later"
        return "GitHub refused the request for the reason it gives"


def _comment(item: dict[str, Any]) -> Comment:
    return Comment(item["id"], str(item.get("html_url") or item.get("url")),
                   str(item.get("body") or ""))
