"""``xce-pr comment`` against the forges' API test double (tests/pr/api_double.py), in process:
one sticky comment per marker, found again across pages, the pull request of a commit, the
body limit, and every failure as a Problem with its fix — the token never shown."""

from __future__ import annotations

import io
import json
import os
import re
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from reconciler.cmds import pr
from reconciler.pr import codes
from tests.pr.api_double import GITHUB, GITHUB_BODY_LIMIT, GITLAB, GITLAB_BODY_LIMIT, ForgeDouble

REPO = {GITHUB: "octo/site-config", GITLAB: "42"}
MARK = "<!-- xce-gitops:plan -->"


@dataclass
class Run:
    rc: int
    out: str
    err: str


@pytest.fixture
def api() -> Iterator[ForgeDouble]:
    with ForgeDouble() as double:
        yield double


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plan.md").write_text("## Plan\n+ create 960 hosts cn[0001-0960]\n")
    (tmp_path / "policy.md").write_text("## Policy\nno change\n")
    return tmp_path


def ci_env(monkeypatch: pytest.MonkeyPatch, api: ForgeDouble, forge: str,
           **extra: str | None) -> None:
    """A CI job's environment, as GitHub Actions or GitLab CI set it, pointed at the double."""
    for name in list(os.environ):
        if name.startswith(("GITHUB_", "GITLAB_", "CI_", "XCE_GITLAB")):
            monkeypatch.delenv(name)
    usual: dict[str, dict[str, str]] = {
        GITHUB: {"GITHUB_ACTIONS": "true", "GITHUB_API_URL": api.github_url,
                 "GITHUB_TOKEN": api.token, "GITHUB_REPOSITORY": REPO[GITHUB]},
        GITLAB: {"GITLAB_CI": "true", "CI_API_V4_URL": api.gitlab_url, "CI_PROJECT_ID": "42",
                 "XCE_GITLAB_TOKEN": api.token, "CI_PROJECT_URL": api.web_url + "/grp/site",
                 "CI_JOB_TOKEN": "job-token-not-used"}}
    env: dict[str, str | None] = {**usual[forge], **extra}
    for name, value in env.items():
        if value is not None:
            monkeypatch.setenv(name, value)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> Run:
    rc = pr.main(["comment", *args])
    out, err = capsys.readouterr()
    return Run(rc, out, err)


def token_hidden(api: ForgeDouble, result: Run) -> None:
    assert api.token not in result.out + result.err


@pytest.mark.parametrize("forge", [GITHUB, GITLAB])
def test_created_then_updated_in_place(forge: str, api: ForgeDouble, files: Path,
                                       monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    ci_env(monkeypatch, api, forge)
    first = run(capsys, "plan.md", "--pr", "5")
    (made,) = api.comments(forge, REPO[forge], 5)
    url = (f"{api.web_url}/{REPO[GITHUB]}/pull/5#issuecomment-{made.id}" if forge == GITHUB
           else f"{api.web_url}/grp/site/-/merge_requests/5#note_{made.id}")
    assert (first.rc, first.out) == (0, f"Created comment {url}\n")
    assert made.body == f"{MARK}\n## Plan\n+ create 960 hosts cn[0001-0960]\n"
    (files / "plan.md").write_text("## Plan\nno changes\n")
    second = run(capsys, "plan.md", "--pr", "5")
    assert (second.rc, second.out) == (0, f"Updated comment {url}\n")
    (kept,) = api.comments(forge, REPO[forge], 5)
    assert (kept.id, kept.updates, kept.body) == (made.id, 1, f"{MARK}\n## Plan\nno changes\n")
    writes = [m for m, _ in api.requests if m != "GET"]
    assert writes == ["POST", "PATCH" if forge == GITHUB else "PUT"]
    assert {r.auth for r in api.log} == {"Bearer" if forge == GITHUB else "PRIVATE-TOKEN"}


@pytest.mark.parametrize("forge", [GITHUB, GITLAB])
def test_the_marker_is_found_on_page_two(forge: str, api: ForgeDouble, files: Path,
                                         monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """150 other comments, the sticky one the 121st: 100 a page, it is on page 2."""
    ci_env(monkeypatch, api, forge)
    api.seed(forge, REPO[forge], 8, [f"review {i}" for i in range(120)])
    assert run(capsys, "plan.md", "--pr", "8").rc == 0
    api.seed(forge, REPO[forge], 8, [f"later {i}" for i in range(30)])
    api.log.clear()
    result = run(capsys, "plan.md", "--pr", "8")
    assert result.rc == 0 and result.out.startswith("Updated comment")
    ours = [c for c in api.comments(forge, REPO[forge], 8) if c.author != "someone-else"]
    assert len(ours) == 1 and ours[0].updates == 1
    assert len(api.comments(forge, REPO[forge], 8)) == 151
    pages = [r.query.get("page", "1") for r in api.log if r.method == "GET"]
    assert pages == ["1", "2"], "read page 1, then followed to page 2 (no further)"


def test_each_marker_is_its_own_comment(api: ForgeDouble, files: Path,
                                        monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    ci_env(monkeypatch, api, GITHUB)
    quoted = f"> {MARK}\n> ## Plan — why is this a create?"
    api.seed(GITHUB, REPO[GITHUB], 3, [quoted, "<!-- xce-gitops:plan-old -->\nold"])
    assert run(capsys, "plan.md", "--pr", "3", "--marker", "plan").rc == 0
    assert run(capsys, "policy.md", "--pr", "3", "--marker", "apply").rc == 0
    assert run(capsys, "policy.md", "--pr", "3", "--marker", "plan").rc == 0
    bodies = {c.body.splitlines()[0]: c for c in api.comments(GITHUB, REPO[GITHUB], 3)}
    assert bodies[MARK].updates == 1 and bodies[MARK].body.endswith("## Policy\nno change\n")
    assert bodies["<!-- xce-gitops:apply -->"].updates == 0
    assert bodies[quoted.splitlines()[0]].body == quoted  # a reviewer's quote is not ours
    assert bodies["<!-- xce-gitops:plan-old -->"].updates == 0
    assert len(bodies) == 4


@pytest.mark.parametrize(("forge", "state"), [(GITHUB, "open"), (GITHUB, "merged"),
                                              (GITLAB, "open"), (GITLAB, "merged")])
def test_commit_finds_its_pull_request(forge: str, state: str, api: ForgeDouble, files: Path,
                                       monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    ci_env(monkeypatch, api, forge)
    sha = "9f" * 20
    api.link_commit(forge, REPO[forge], sha, 11, state="closed")
    api.link_commit(forge, REPO[forge], sha, 12, state=state)
    result = run(capsys, "plan.md", "--commit", sha.upper(), "--marker", "apply")
    assert result.rc == 0, result.err
    assert len(api.comments(forge, REPO[forge], 12)) == 1
    assert api.comments(forge, REPO[forge], 11) == []


def test_commit_without_or_with_many_pull_requests(api: ForgeDouble, files: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    ci_env(monkeypatch, api, GITHUB)
    none = run(capsys, "plan.md", "--commit", "abc1234")
    assert none.rc == 1 and f"error[{codes.NO_PULL}]" in none.err
    assert "no open or merged pull request with commit abc1234" in none.err
    for number in (4, 6):
        api.link_commit(GITHUB, REPO[GITHUB], "abc1234", number)
    many = run(capsys, "plan.md", "--commit", "abc1234")
    assert many.rc == 1 and "in 2 open pull requests (#4, #6)" in many.err
    assert "--pr N" in many.err and api.comments(GITHUB, REPO[GITHUB], 4) == []


def test_the_ci_names_the_pull_request(api: ForgeDouble, files: Path,
                                       monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """GitHub: the event file's pull_request.number; GitLab: CI_MERGE_REQUEST_IID."""
    event = files / "event.json"
    event.write_text(json.dumps({"action": "synchronize", "pull_request": {"number": 21}}))
    ci_env(monkeypatch, api, GITHUB, GITHUB_EVENT_PATH=str(event))
    assert run(capsys, "plan.md").rc == 0
    ci_env(monkeypatch, api, GITLAB, CI_MERGE_REQUEST_IID="22")
    assert run(capsys, "plan.md").rc == 0
    assert len(api.comments(GITHUB, REPO[GITHUB], 21)) == 1
    assert len(api.comments(GITLAB, REPO[GITLAB], 22)) == 1


def test_the_body_from_stdin_and_several_files(api: ForgeDouble, files: Path,
                                               monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    ci_env(monkeypatch, api, GITHUB)
    stdin = io.TextIOWrapper(io.BytesIO("## Drift — none\n\n\n".encode()), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stdin)
    assert run(capsys, "plan.md", "-", "policy.md", "--pr", "2").rc == 0
    (comment,) = api.comments(GITHUB, REPO[GITHUB], 2)
    assert comment.body == (f"{MARK}\n## Plan\n+ create 960 hosts cn[0001-0960]\n\n"
                            "## Drift — none\n\n## Policy\nno change\n")


def test_unreadable_files_stop_before_anything_is_sent(api: ForgeDouble, files: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    ci_env(monkeypatch, api, GITHUB)
    (files / "latin1.md").write_bytes("caf\xe9\n".encode("latin-1"))
    result = run(capsys, "plan.md", "missing.md", "latin1.md", "--pr", "2")
    assert result.rc == 1 and api.requests == []
    assert f"missing.md: error[{codes.INPUT}]: cannot be read: No such file" in result.err
    assert f"latin1.md: error[{codes.INPUT}]: is not UTF-8 text (byte 3)" in result.err
    twice = run(capsys, "-", "-", "--pr", "2")
    assert twice.rc == 1 and "given twice" in twice.err


@pytest.mark.parametrize(("forge", "limit"), [(GITHUB, GITHUB_BODY_LIMIT),
                                              (GITLAB, GITLAB_BODY_LIMIT)])
def test_a_body_past_the_limit_is_cut_with_a_note(forge: str, limit: int, api: ForgeDouble,
                                                  files: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The double refuses a body over the limit (422/400), as the forges do."""
    ci_env(monkeypatch, api, forge)
    rows = "".join(f"+ create host cn{i:07d} (group cpu-a)\n" for i in range(limit // 36 + 500))
    (files / "big.md").write_text(f"# Plan\n<details><summary>all</summary>\n\n```diff\n{rows}")
    result = run(capsys, "big.md", "--pr", "9", "--format", "json")
    assert result.rc == 0, result.err
    (comment,) = api.comments(forge, REPO[forge], 9)
    assert len(comment.body) <= limit < len(MARK) + (files / "big.md").stat().st_size
    head, _, note = comment.body.rpartition("\n---\n\n**Cut:**")
    assert head.endswith("(group cpu-a)\n```\n</details>\n"), "open markup is closed"
    left = json.loads(result.out)["left_out"]
    assert f"limit of {limit:,} characters; the last {left:,} were left out" in note
    assert "The whole text is in big.md of the CI job" in note
    assert f"warning[{codes.CUT}]" in result.err


def test_github_refusals_name_the_fix(api: ForgeDouble, files: Path,
                                      monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The status code and GitHub's message are asserted, not the standard library's reason
    phrase between them: it changes between Pythons (422 is "Unprocessable Entity" on 3.11,
    "Unprocessable Content" on 3.13)."""
    ci_env(monkeypatch, api, GITHUB)
    cases = [
        (401, None, codes.DENIED, "Bad credentials", "GITHUB_TOKEN is wrong or has expired"),
        (403, "POST", codes.DENIED, "Resource not accessible by integration",
         "`permissions: pull-requests: write`. A pull_request from a fork"),
        (403, "GET", codes.DENIED, "API rate limit exceeded", "run the job again later"),
        (422, "POST", codes.REFUSED, "Validation Failed", "for the reason it gives"),
        (500, None, codes.BAD_ANSWER, "Server Error", "githubstatus.com"),
    ]
    for status, method, code, said, hint in cases:
        message = "API rate limit exceeded for installation" if "rate" in said else None
        api.fail(status, message, method=method)
        result = run(capsys, "plan.md", "--pr", "5")
        assert result.rc == 1 and result.out == ""
        assert f"GitHub API: error[{code}]: " in result.err, result.err
        if message is None:
            answered = re.search(rf"answered {status} [A-Z][A-Za-z -]+: (.*)", result.err)
            assert answered and answered[1] == said, result.err
        else:
            assert said in result.err, result.err
        assert hint in result.err
        assert f"{api.github_url}/repos/octo/site-config/issues/5/comments" in result.err
        token_hidden(api, result)
    assert api.comments(GITHUB, REPO[GITHUB], 5) == []


def test_not_found_names_repository_and_number(files: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    with ForgeDouble(strict=True) as api:
        api.add_pull(GITHUB, REPO[GITHUB], 5)
        api.add_pull(GITLAB, REPO[GITLAB], 5)
        for forge, hint in ((GITHUB, "check GITHUB_REPOSITORY (octo/site-config)"),
                            (GITLAB, "check CI_PROJECT_ID (42) and the merge request's IID")):
            ci_env(monkeypatch, api, forge)
            result = run(capsys, "plan.md", "--pr", "6", "--format", "json")
            assert result.rc == 1 and hint in result.err
            assert json.loads(result.out)["problems"][0]["code"] == codes.NOT_FOUND
            token_hidden(api, result)
        ci_env(monkeypatch, api, GITLAB, CI_PROJECT_ID="43")
        result = run(capsys, "plan.md", "--pr", "5")
        assert "answered 404 Not Found: 404 Project Not Found" in result.err


def test_gitlab_refusals_name_the_token_to_use(api: ForgeDouble, files: Path,
                                               monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    ci_env(monkeypatch, api, GITLAB, XCE_GITLAB_TOKEN=None, CI_JOB_TOKEN=api.token)
    job = run(capsys, "plan.md", "--pr", "5")
    assert job.rc == 1 and f"error[{codes.DENIED}]" in job.err
    assert "answered 401 Unauthorized: 401 Unauthorized" in job.err
    assert "CI_JOB_TOKEN may not use merge request comments" in job.err
    assert "project access token with the api scope" in job.err
    assert "masked CI/CD variable XCE_GITLAB_TOKEN" in job.err
    assert {r.auth for r in api.log} == {"JOB-TOKEN"}
    token_hidden(api, job)
    api.fail(404, "404 Project Not Found")  # how a private project answers an unknown user
    private = run(capsys, "plan.md", "--pr", "5")
    assert "answered 404 Not Found" in private.err and "XCE_GITLAB_TOKEN" in private.err
    ci_env(monkeypatch, api, GITLAB, XCE_GITLAB_TOKEN="glpat-wrong")
    wrong = run(capsys, "plan.md", "--pr", "5")
    assert "XCE_GITLAB_TOKEN is wrong, expired or revoked" in wrong.err
    ci_env(monkeypatch, api, GITLAB)
    api.fail(403, method="POST")
    scope = run(capsys, "plan.md", "--pr", "5")
    assert "answered 403 Forbidden: 403 Forbidden" in scope.err
    assert "the api scope (read_api is not enough)" in scope.err
    api.seed(GITLAB, REPO[GITLAB], 5, [f"{MARK}\nposted by an earlier token"], author="bot-old")
    theirs = run(capsys, "plan.md", "--pr", "5")
    assert theirs.rc == 1 and "written by another user" in theirs.err
    for result in (private, wrong, scope, theirs):
        token_hidden(api, result)


@pytest.mark.parametrize(("forge", "unset", "named"), [
    (GITHUB, "GITHUB_TOKEN", "add `GITHUB_TOKEN: ${{ github.token }}` to the step's env"),
    (GITHUB, "GITHUB_REPOSITORY", "GitHub Actions sets it in every job"),
    (GITHUB, "GITHUB_EVENT_PATH", "GITHUB_EVENT_PATH is not set"),
    (GITLAB, "CI_PROJECT_ID", "CI_PROJECT_ID is not set"),
    (GITLAB, "CI_API_V4_URL", "CI_API_V4_URL is not set"),
    (GITLAB, "XCE_GITLAB_TOKEN CI_JOB_TOKEN", "neither XCE_GITLAB_TOKEN nor CI_JOB_TOKEN"),
    (GITLAB, "CI_MERGE_REQUEST_IID", "not part of a merge request pipeline"),
    (GITHUB, "GITHUB_ACTIONS", "not running in GitHub Actions or GitLab CI"),
])
def test_a_missing_variable_is_named(forge: str, unset: str, named: str, api: ForgeDouble,
                                     files: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    ci_env(monkeypatch, api, forge, **dict.fromkeys(unset.split()))
    result = run(capsys, "plan.md")
    assert result.rc == 1 and named in result.err and api.requests == []
    assert f"error[{codes.NO_PULL if 'pipeline' in named else codes.CI_SETTINGS}]" in result.err
    token_hidden(api, result)


def test_a_push_event_is_not_a_pull_request(api: ForgeDouble, files: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    event = files / "event.json"
    event.write_text(json.dumps({"ref": "refs/heads/main", "after": "ab" * 20}))
    ci_env(monkeypatch, api, GITHUB, GITHUB_EVENT_PATH=str(event), GITHUB_EVENT_NAME="push")
    result = run(capsys, "plan.md")
    assert result.rc == 1 and f"error[{codes.NO_PULL}]" in result.err
    assert "runs on push, not on a pull request" in result.err and "--commit SHA" in result.err


def test_a_forge_that_does_not_answer(files: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A closed port: refused at once; a port that accepts and never answers: the timeout."""
    with ForgeDouble() as api:
        pass  # its port is closed now
    ci_env(monkeypatch, api, GITHUB)
    closed = run(capsys, "plan.md", "--pr", "5")
    assert closed.rc == 1 and f"error[{codes.UNREACHABLE}]" in closed.err
    assert f"cannot reach 127.0.0.1:{api.port}: connection refused" in closed.err
    assert "check GITHUB_API_URL" in closed.err
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        ci_env(monkeypatch, api, GITLAB, CI_API_V4_URL=f"http://127.0.0.1:{port}/api/v4")
        hung = run(capsys, "plan.md", "--pr", "5", "--timeout", "0.3")
    assert hung.rc == 1 and f"cannot reach 127.0.0.1:{port}: no answer within 0.3 s" in hung.err
    token_hidden(api, closed)
    token_hidden(api, hung)


def test_a_redirect_is_not_followed(api: ForgeDouble, files: Path,
                                    monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Following it would send the token to another address."""
    ci_env(monkeypatch, api, GITHUB)
    api.fail(301, "Moved Permanently", headers={"Location": "http://127.0.0.1:9/elsewhere"})
    result = run(capsys, "plan.md", "--pr", "5")
    assert result.rc == 1 and f"error[{codes.BAD_ANSWER}]" in result.err
    assert "a redirect to http://127.0.0.1:9/elsewhere" in result.err
    assert "does not follow redirects" in result.err and len(api.requests) == 1


def test_usage_mistakes_and_the_crash_report(api: ForgeDouble, files: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    ci_env(monkeypatch, api, GITHUB)
    for args, said in ((["plan.md", "--pr", "1", "--commit", "abcdef0"], "not allowed with"),
                       (["plan.md", "--marker", "no spaces"], "is not a marker name"),
                       (["plan.md", "--pr", "0"], "is not a pull request number"),
                       (["plan.md", "--commit", "main"], "is not a commit's hexadecimal id")):
        result = run(capsys, *args, "--format", "json")
        assert result.rc == 1 and said in result.err
        assert json.loads(result.out)["problems"][0]["code"] == codes.USAGE

    def broken(*args: object) -> None:
        raise RuntimeError("a bug of ours")

    monkeypatch.setenv("XCE_CRASH_DIR", str(tmp_path / "crash"))
    monkeypatch.setattr(pr, "post", broken)
    crash = run(capsys, "plan.md", "--pr", "1")
    assert crash.rc == 1 and "internal error (RuntimeError)" in crash.err
    (report,) = (tmp_path / "crash").iterdir()
    assert "a bug of ours" in report.read_text() and api.token not in report.read_text()
    token_hidden(api, crash)
