"""Issue 21, "Pipelines": the pipelines xce-init writes, run under a shell for both forges in
a repository xce-init made (tests/scaffold/pipelines.py), with xce-pr talking to the forges'
API double (tests/pr/api_double.py). What they must do:

- a comment that cannot be posted (the forge answers 500) is a failure the job reports at
  its end, after the artifacts: GitHub's final check fails naming it, GitLab's script goes
  on to its end (the escalation still said) and fails;
- the first push of a new repository refuses to apply (exit 4) and says to run the pipeline
  by hand; the by-hand run (GitHub ``workflow_dispatch``, GitLab a ``web`` pipeline with a
  manual apply job) plans, records and applies; it never runs on any other event or branch;
- a second push to a pull request supersedes the first one's recorded plan.
"""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from reconciler.state import open_store
from tests.pr.api_double import GITHUB, GITLAB, ForgeDouble
from tests.scaffold.conftest import run_editable
from tests.scaffold.flow import ok
from tests.scaffold.pipelines import GitLabPlayer, commit_edit, runner_env, runner_venv
from tests.wheel.actions_runner import ActionsRunner

pytestmark = pytest.mark.slow

REPO = {GITHUB: "acme/acme-site", GITLAB: "42"}
WORKFLOW = Path(".github", "workflows", "xce-gitops.yml")
HOSTS = ("hosts: cn[01-08]", "hosts: cn[01-10]", "hosts: cn[01-12]")
ESCALATION = ("    active: [shared-fs]\n", "    active: [shared-fs, controller]\n")


def _site(root: Path, ci: str) -> git.Repo:
    """``xce-init --ci CI`` in ``root``: the admin's repository."""
    ok(run_editable(["xce-init", "acme-site", "--ci", ci], root, {}))
    return git.Repo(root / "acme-site")


def _pending(state: Path) -> list[tuple[str, str]]:
    """The plans pending review in the shared store: (branch, commit)."""
    with open_store(str(state), state) as store:
        return [(r.branch, r.commit) for r in store.pending_plans("acme-site")]


def test_the_github_workflow_under_a_shell(tmp_path: Path) -> None:
    admin = _site(tmp_path, "github")
    origin = tmp_path / "origin.git"
    git.Repo.init(origin, bare=True, initial_branch="main")
    admin.create_remote("origin", str(origin))
    admin.git.push("origin", "main")
    state = tmp_path / "state.sqlite"
    env = runner_env(tmp_path, runner_venv(tmp_path / "runner-venv"))
    with ForgeDouble() as forge:
        runner = ActionsRunner(
            admin.working_dir / WORKFLOW, origin, tmp_path / "runs", repository=REPO[GITHUB],
            api_url=forge.github_url, token=forge.token, secrets={"XCE_STATE_URL": str(state)},
            env=env, variables={"XCE_WORKDIR": env["XCE_WORKDIR"]},
        )  # fmt: skip

        # the first push: nothing was reviewed, so the apply refuses and says what to do
        first = runner.push()
        assert {j: first.job(j).result for j in first.jobs} == {
            "plan": "skipped", "apply": "failure", "bootstrap-plan": "skipped",
            "bootstrap-apply": "skipped", "drift": "skipped"}
        refused = first.job("apply").step("Apply the reviewed plan")
        assert refused.exit_code == 4 and "error[XCE770]" in refused.output
        assert "run this workflow by hand (Actions → xce-gitops → Run workflow)" in (
            refused.output)
        assert "bootstrap job by hand" in refused.output  # xce-apply's own hint

        # by hand on another branch: the guard holds, nothing runs
        admin.git.push("origin", "main:refs/heads/other")
        other = runner.scheduled("workflow_dispatch", branch="other")
        assert {other.job(j).result for j in other.jobs} == {"skipped"}

        # by hand on main: plan and record, then apply; a push then has nothing to apply
        boot = runner.scheduled("workflow_dispatch")
        assert boot.job("bootstrap-plan").result == "success", boot.job("bootstrap-plan").log
        assert "to add" in boot.job("bootstrap-plan").summary  # what the approver reads
        assert boot.job("bootstrap-apply").result == "success", boot.job("bootstrap-apply").log
        assert [boot.job(j).result for j in ("plan", "apply", "drift")] == ["skipped"] * 3
        again = runner.push().job("apply")
        assert again.result == "success" and "nothing to apply" in again.log

        # a pull request whose comment cannot be posted: the job fails at its end, named
        commit_edit(admin, "more", "hosts.yaml", HOSTS[0], HOSTS[1])
        admin.git.push("origin", "more")
        forge.fail(500, method="POST", path="/comments")
        failed = runner.pull_request(1, head="more", action="opened")
        plan = failed.job("plan")
        assert plan.step("Post the plan comment").exit_code == 0  # recorded, not stopped
        final = plan.step("Fail if a step failed")
        assert final.outcome == "failure" and "xce-pr comment failed" in final.output
        assert (failed.artifact("xce-plan") / "plan.md").is_file()
        assert plan.result == "failure" and forge.comments(GITHUB, REPO[GITHUB], 1) == []

        # a second push: commented, and the first push's plan is superseded
        head = commit_edit(admin, "more", "hosts.yaml", HOSTS[1], HOSTS[2])
        admin.git.push("origin", "more")
        second = runner.pull_request(1, head="more")
        assert second.job("plan").result == "success", second.job("plan").log
        assert len(forge.comments(GITHUB, REPO[GITHUB], 1)) == 1
        [(branch, commit)] = _pending(state)
        assert branch == "more" and commit == second.event.sha != head


def _checkout(repo: git.Repo, where: Path, sha: str) -> Path:
    """A job's fresh clone at ``sha``, with the runner's venv in ``xce-out/venv``."""
    clone = git.Repo.clone_from(repo.working_dir, where / "acme-site")
    clone.git.checkout(sha)
    runner_venv(where / "acme-site" / "xce-out" / "venv")
    return where / "acme-site"


def test_the_gitlab_pipeline_under_a_shell(tmp_path: Path) -> None:
    admin = _site(tmp_path, "gitlab")
    main = admin.head.commit.hexsha
    state = tmp_path / "state.sqlite"
    env = runner_env(tmp_path, tmp_path / "unused-venv")
    with ForgeDouble() as forge:
        player = GitLabPlayer(Path(admin.working_dir, ".gitlab-ci.yml"), {
            **env, "XCE_STATE_URL": str(state), "CI_DEFAULT_BRANCH": "main",
            "CI_API_V4_URL": forge.gitlab_url, "CI_PROJECT_ID": REPO[GITLAB],
            "CI_PROJECT_URL": forge.web_url + "/acme/acme-site", "XCE_GITLAB_TOKEN": forge.token,
        })
        on_main = {"CI_COMMIT_BRANCH": "main", "CI_COMMIT_SHA": main}
        runs = iter(range(100))

        def run(job: str, sha: str, ci: dict[str, str]) -> tuple[int, str]:
            done = player.run(job, _checkout(admin, tmp_path / f"job-{next(runs)}", sha), ci)
            return done.exit_code if not done.allowed else -done.exit_code, done.output

        # the first push: the apply refuses and says how to run it by hand
        push = {**on_main, "CI_PIPELINE_SOURCE": "push"}
        assert player.created(push) == {"xce-apply": "on_success"}
        code, out = run("xce-apply", main, push)
        assert code == 4 and "error[XCE770]" in out, out
        assert "run a pipeline by hand on the default branch" in out

        # by hand: only on the default branch, the apply started by hand after the plan
        web = {**on_main, "CI_PIPELINE_SOURCE": "web"}
        assert player.created({**web, "CI_COMMIT_BRANCH": "other"}) == {}
        assert player.created(web) == {"xce-bootstrap-plan": "on_success",
                                       "xce-bootstrap-apply": "manual"}
        code, out = run("xce-bootstrap-plan", main, web)
        assert code == 0 and "to add" in out, out
        code, out = run("xce-bootstrap-apply", main, web)
        assert code == 0, out
        assert run("xce-apply", main, push)[0] == 0

        # a merge request that escalates, whose comment cannot be posted: the script goes on
        # to its end, says both, and fails
        head = commit_edit(admin, "wider", "proxies.yaml", *ESCALATION)
        request = {"CI_PIPELINE_SOURCE": "merge_request_event", "CI_MERGE_REQUEST_IID": "1",
                   "CI_MERGE_REQUEST_DIFF_BASE_SHA": main, "CI_COMMIT_SHA": head,
                   "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": "wider"}
        assert player.created(request) == {"xce-plan": "on_success"}
        forge.fail(500, method="POST", path="/notes")
        code, out = run("xce-plan", head, request)
        assert code == 1 and "xce-pr comment failed" in out, out
        assert "policy escalation" in out
        assert forge.comments(GITLAB, REPO[GITLAB], 1) == []

        # posted on the second push: the escalation is the job's exit 3 (a warning), and
        # the first push's plan is superseded
        head = commit_edit(admin, "wider", "hosts.yaml", HOSTS[0], HOSTS[1])
        code, out = run("xce-plan", head, {**request, "CI_COMMIT_SHA": head})
        assert code == -3, out  # allowed to fail: the pipeline shows a warning
        assert len(forge.comments(GITLAB, REPO[GITLAB], 1)) == 1
        assert _pending(state) == [("wider", head)]
