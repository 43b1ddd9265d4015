"""The test double answers as the forges document (so a test against it means something):
auth, pagination, limits, errors. Spoken to with plain urllib, not with xce-pr's client."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.pr.api_double import GITHUB, GITLAB, ForgeDouble


def call(url: str, method: str = "GET", body: Any = None, headers: dict[str, str] | None = None
         ) -> tuple[int, Any, dict[str, str]]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data, headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            return reply.status, json.load(reply), dict(reply.headers)
    except urllib.error.HTTPError as err:
        return err.code, json.load(err), dict(err.headers)


def test_github_pagination_follows_the_link_header() -> None:
    with ForgeDouble() as api:
        api.seed(GITHUB, "o/r", 3, [f"c{i}" for i in range(150)])
        auth = {"Authorization": f"Bearer {api.token}"}
        status, page1, headers = call(f"{api.github_url}/repos/o/r/issues/3/comments"
                                      "?per_page=100", headers=auth)
        assert status == 200 and len(page1) == 100 and page1[0]["body"] == "c0"
        nxt = headers["Link"].split(";")[0].strip("<>")
        assert "/repositories/" in nxt and 'rel="last"' in headers["Link"]
        _, page2, headers2 = call(nxt, headers=auth)
        assert [c["body"] for c in page2] == [f"c{i}" for i in range(100, 150)]
        assert 'rel="next"' not in headers2["Link"]


def test_github_auth_limit_and_failures() -> None:
    with ForgeDouble(strict=True) as api:
        api.add_pull(GITHUB, "o/r", 1)
        url = f"{api.github_url}/repos/o/r/issues/1/comments"
        assert call(url, "POST", {"body": "x"})[1]["message"] == "Requires authentication"
        bad = {"Authorization": "token nope"}
        assert call(url, "POST", {"body": "x"}, bad)[:2][1]["message"] == "Bad credentials"
        auth = {"Authorization": f"token {api.token}"}
        status, body, _ = call(url, "POST", {"body": "x" * 65_537}, auth)
        assert status == 422 and "too long" in body["errors"][0]["message"]
        assert call(f"{api.github_url}/repos/o/r/issues/2/comments", headers=auth)[0] == 404
        api.fail(403, method="POST")
        status, body, _ = call(url, "POST", {"body": "x"}, auth)
        assert (status, body["message"]) == (403, "Resource not accessible by integration")
        status, made, _ = call(url, "POST", {"body": "x"}, auth)
        assert status == 201
        call(f"{api.github_url}/repos/o/r/issues/comments/{made['id']}", "PATCH", {"body": "y"},
             auth)
        assert [(c.body, c.updates) for c in api.comments(GITHUB, "o/r", 1)] == [("y", 1)]


def test_gitlab_notes_newest_first_with_x_next_page() -> None:
    with ForgeDouble() as api:
        api.seed(GITLAB, "7", 2, [f"n{i}" for i in range(25)])
        auth = {"PRIVATE-TOKEN": api.token}
        _, page1, headers = call(f"{api.gitlab_url}/projects/7/merge_requests/2/notes",
                                 headers=auth)
        assert len(page1) == 20 and page1[0]["body"] == "n24"
        assert headers["X-Next-Page"] == "2" and headers["X-Total"] == "25"
        _, page2, headers = call(f"{api.gitlab_url}/projects/7/merge_requests/2/notes"
                                 "?sort=asc&page=2", headers=auth)
        assert [n["body"] for n in page2] == ["n20", "n21", "n22", "n23", "n24"]
        assert headers["X-Next-Page"] == ""


@pytest.mark.parametrize("allowed", [False, True])
def test_gitlab_job_token_and_foreign_notes(allowed: bool) -> None:
    with ForgeDouble(job_token_allowed=allowed) as api:
        (theirs,) = api.seed(GITLAB, "7", 2, ["a human's note"])
        url = f"{api.gitlab_url}/projects/7/merge_requests/2/notes"
        status, body, _ = call(url, "POST", {"body": "x"}, {"JOB-TOKEN": api.token})
        assert status == (201 if allowed else 401)
        if not allowed:
            assert body == {"message": "401 Unauthorized"}
        status, body, _ = call(f"{url}/{theirs}", "PUT", {"body": "x"},
                               {"PRIVATE-TOKEN": api.token})
        assert (status, body) == (403, {"message": "403 Forbidden"})


def test_commit_lookup_and_the_request_log() -> None:
    with ForgeDouble() as api:
        api.link_commit(GITHUB, "o/r", "ABC123", 5, state="merged")
        api.link_commit(GITLAB, "7", "abc123", 9)
        _, pulls, _ = call(f"{api.github_url}/repos/o/r/commits/abc123/pulls",
                           headers={"Authorization": f"Bearer {api.token}"})
        assert [(p["number"], p["state"]) for p in pulls] == [(5, "closed")]
        _, mrs, _ = call(f"{api.gitlab_url}/projects/7/repository/commits/abc123/merge_requests",
                         headers={"PRIVATE-TOKEN": api.token})
        assert [(m["iid"], m["state"]) for m in mrs] == [(9, "opened")]
        assert api.requests == [("GET", "/github/repos/o/r/commits/abc123/pulls"),
                                ("GET", "/gitlab/api/v4/projects/7/repository/commits/abc123"
                                        "/merge_requests")]
