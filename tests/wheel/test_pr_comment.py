"""xce-pr from the wheel installed in a fresh venv, run as a site's CI job runs it: the CI's
variables and event file, no flags but the files, against the forges' API test double
(tests/pr/api_double.py). Posted on the first push, updated on the second."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.pr.api_double import GITHUB, GITLAB, ForgeDouble
from tests.wheel.conftest import Installed

pytestmark = [pytest.mark.wheel, pytest.mark.slow]


def job_env(api: ForgeDouble, forge: str, where: Path) -> dict[str, str]:
    """What GitHub Actions (a pull_request event) or GitLab CI (a merge request pipeline)
    hands the job's step, pointed at the double."""
    if forge == GITHUB:
        event = where / "event.json"
        event.write_text(json.dumps({"action": "opened", "pull_request": {"number": 17}}))
        return {"GITHUB_ACTIONS": "true", "GITHUB_API_URL": api.github_url,
                "GITHUB_TOKEN": api.token, "GITHUB_REPOSITORY": "octo/site-config",
                "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event)}
    return {"GITLAB_CI": "true", "CI_API_V4_URL": api.gitlab_url, "CI_PROJECT_ID": "42",
            "CI_MERGE_REQUEST_IID": "17", "XCE_GITLAB_TOKEN": api.token,
            "CI_JOB_TOKEN": "job-token", "CI_PROJECT_URL": api.web_url + "/grp/site"}


@pytest.mark.parametrize("forge", [GITHUB, GITLAB])
def test_posted_then_updated_from_the_wheel(forge: str, installed: Installed, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):  # this suite may itself run in a CI job
        if name.startswith(("GITHUB_", "GITLAB_", "CI_", "XCE_GITLAB")):
            monkeypatch.delenv(name)
    (tmp_path / "plan.md").write_text("## Plan\n+ create 2 hosts cn[01-02]\n")
    (tmp_path / "policy.md").write_text("## Policy\nno change\n")
    repo = "octo/site-config" if forge == GITHUB else "42"
    with ForgeDouble() as api:
        env = job_env(api, forge, tmp_path)
        first = installed.run(["xce-pr", "comment", "plan.md", "policy.md"], tmp_path, env)
        assert first.returncode == 0, first.stderr
        assert first.stdout.startswith("Created comment http://127.0.0.1:")
        (tmp_path / "plan.md").write_text("## Plan\nno changes\n")
        second = installed.run(["xce-pr", "comment", "plan.md", "policy.md"], tmp_path, env)
        assert second.returncode == 0, second.stderr
        assert second.stdout == first.stdout.replace("Created", "Updated")
        (comment,) = api.comments(forge, repo, 17)
    assert comment.updates == 1
    assert comment.body == ("<!-- xce-gitops:plan -->\n## Plan\nno changes\n\n"
                            "## Policy\nno change\n")
    for done in (first, second):
        assert api.token not in done.stdout + done.stderr
