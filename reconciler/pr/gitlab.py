"""GitLab's REST API (v4), as xce-pr uses it: a merge request's notes
(``/projects/:id/merge_requests/:iid/notes``), listed oldest first, 100 a page along
``X-Next-Page``; a commit's merge requests from
``/projects/:id/repository/commits/:sha/merge_requests``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from reconciler.pr.ci import Settings
from reconciler.pr.forge import CLOSED, MERGED, OPEN, Comment, Pull
from reconciler.pr.http import Failure, JsonClient, next_page
from reconciler.pr.sticky import carries

BODY_LIMIT = 1_000_000  # a note's longest body
_TOKEN_HINT = ("create a project access token with the api scope (role Reporter or higher) "
               "and store it as a masked CI/CD variable XCE_GITLAB_TOKEN")


class GitLab:
    label = "GitLab"
    body_limit = BODY_LIMIT

    def __init__(self, settings: Settings, timeout: float) -> None:
        self._settings = settings
        self._project = f"/projects/{quote(settings.repo, safe='')}"
        header = "JOB-TOKEN" if settings.job_token else "PRIVATE-TOKEN"
        self.http = JsonClient("GitLab API", settings.api_url, {header: settings.token},
                               timeout=timeout, secret=settings.token, explain=self._explain,
                               variable="CI_API_V4_URL")

    def find_comment(self, pull: int, marker: str) -> Comment | None:
        query = {"sort": "asc", "order_by": "created_at", "per_page": "100"}
        for note in self.http.pages(self._notes(pull), query, next_page):
            if (isinstance(note, dict) and not note.get("system")
                    and isinstance(note.get("body"), str) and isinstance(note.get("id"), int)
                    and carries(note["body"], marker)):
                return self._comment(pull, note)
        return None

    def create_comment(self, pull: int, body: str) -> Comment:
        reply = self.http.call("POST", self._notes(pull), {"body": body})
        return self._comment(pull, self.http.need(reply, "POST", id=int))

    def update_comment(self, pull: int, comment: Comment, body: str) -> Comment:
        reply = self.http.call("PUT", f"{self._notes(pull)}/{comment.id}", {"body": body})
        return self._comment(pull, self.http.need(reply, "PUT", id=int))

    def pulls_for_commit(self, sha: str) -> list[Pull]:
        path = f"{self._project}/repository/commits/{quote(sha, safe='')}/merge_requests"
        states = {"opened": OPEN, "merged": MERGED}
        return [Pull(item["iid"], states.get(str(item.get("state")), CLOSED),
                     str(item.get("web_url")))
                for item in self.http.pages(path, {"per_page": "100"}, next_page)
                if isinstance(item, dict) and isinstance(item.get("iid"), int)]

    def _notes(self, pull: int) -> str:
        return f"{self._project}/merge_requests/{pull}/notes"

    def _comment(self, pull: int, note: dict[str, Any]) -> Comment:
        """The note, with its address on the merge request's page when the CI names the
        project's (``CI_PROJECT_URL``), else its API address."""
        web = self._settings.environ.get("CI_PROJECT_URL", "").rstrip("/")
        url = f"{web}/-/merge_requests/{pull}#note_{note['id']}" if web else \
            f"{self.http.base}{self._notes(pull)}/{note['id']}"
        return Comment(note["id"], url, str(note.get("body") or ""))

    def _explain(self, failure: Failure) -> str:
        """GitLab's refusals, with the setting that fixes each."""
        if failure.status in (401, 403, 404) and self._settings.job_token:
            return ("CI_JOB_TOKEN may not use merge request comments (GitLab lets it use only "
                    "a few APIs, and answers 401, or 404 for a private project): "
                    f"{_TOKEN_HINT}")
        if failure.status == 401:
            return f"XCE_GITLAB_TOKEN is wrong, expired or revoked: {_TOKEN_HINT}"
        if failure.status == 403 and failure.method == "PUT":
            return ("the comment carrying the marker was written by another user (an earlier "
                    "token?), and GitLab lets only its author change it: delete that comment, "
                    "or post with the token that wrote it")
        if failure.status == 403:
            return ("the token's user may not comment on this merge request: give the token "
                    "the api scope (read_api is not enough) and the Reporter role or higher")
        if failure.status == 404:
            return (f"check CI_PROJECT_ID ({self._settings.repo}) and the merge request's IID "
                    "(--pr, --commit or CI_MERGE_REQUEST_IID); GitLab answers 404 also when "
                    "the token's user may not see the project")
        if failure.status >= 500:
            return "GitLab is failing: run the job again later"
        return "GitLab refused the request for the reason it gives"
