"""The pull-request pipeline played for real, from the installed wheel (issue 11, "Tested for
real"): the GitHub workflow `xce-init --ci github` writes, run job by job by
tests/wheel/actions_runner.py (a local runner of GitHub Actions jobs, for tests) against a bare
origin repository. Every job gets a fresh clone and installs xce-gitops with the workflow's own
install step (offline: pip finds the wheel in PIP_FIND_LINKS); they all act on one "cluster"
(the providers' paths are absolute, outside every clone) and one shared state store (PostgreSQL
when XCE_TEST_PG_URL is set, else SQLite). GitHub's REST API is the test double
tests/pr/api_double.py (ForgeDouble), which records the comments.

What the play asserts is what the issue asks: one sticky comment updated on the second push;
after "merge" the reviewed plan is applied and a plan shows nothing; a second pull request
merged in between is refused (exit 4); a live change after the review is planned again and
put up for review on the merged pull request (exit 3); the nightly drift report.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import git
import psycopg
import pytest

from tests.git_identity import SITE_ADMIN, identity
from tests.pr.api_double import ForgeDouble, RecordedComment
from tests.state.targets import pg_base_url, with_options
from tests.wheel.actions_runner import ActionsRunner, JobResult, Run
from tests.wheel.conftest import Installed

pytestmark = [pytest.mark.wheel, pytest.mark.slow]

REPO = "acme/acme-site"
WORKFLOW = Path(".github", "workflows", "xce-gitops.yml")
ADMIN = SITE_ADMIN
IDENTITY = identity(ADMIN)
APPLY_STEP = "Apply the reviewed plan"
STICKY = "<!-- xce-gitops:{} -->"  # xce-pr's marker of the comment it keeps up to date
CONFIG_DIFF, LIVE_PLAN = "## What the config changes", "## What the cluster will get"


@dataclass
class Play:
    """The site's origin, an admin's clone to push branches from, the forge and the runner."""

    installed: Installed
    root: Path
    origin: Path
    admin: git.Repo
    forge: ForgeDouble
    runner: ActionsRunner
    cluster: Path
    state_url: str
    timings: dict[str, float] = field(default_factory=dict)
    checks: int = 0

    def push_branch(self, branch: str, old: str, new: str, file: str = "hosts.yaml") -> None:
        """Commit one edit of `file` on `branch` (new: from main) and push it to the origin."""
        self.admin.git.fetch("origin")
        remote = f"origin/{branch}"
        start = remote if remote in [ref.name for ref in self.admin.remotes.origin.refs] else (
            "origin/main"
        )  # fmt: skip
        self.admin.git.checkout("-B", branch, start)
        path = Path(self.admin.working_dir, file)
        text = path.read_text()
        assert old in text, f"{old!r} is not in {file}:\n{text}"
        path.write_text(text.replace(old, new, 1))
        self.admin.index.add([file])
        self.admin.index.commit(f"{file}: {new}", author=ADMIN, committer=ADMIN)
        self.admin.git.push("origin", f"{branch}:refs/heads/{branch}", "--force")

    def merge(self, number: int, branch: str) -> str:
        """GitHub's merge button: a merge commit of the branch pushed to main (GitHub then
        knows the commit's pull request, which `xce-pr comment --commit` asks for)."""
        self.admin.git.fetch("origin")
        self.admin.git.checkout("-B", "main", "origin/main")
        with self.admin.git.custom_environment(**IDENTITY):
            self.admin.git.merge("--no-ff", "-m", f"Merge pull request #{number} from {branch}",
                                 f"origin/{branch}")  # fmt: skip
        self.admin.git.push("origin", "main")
        sha = self.admin.head.commit.hexsha
        self.forge.link_commit("github", REPO, sha, number, state="merged")
        return sha

    def comments(self, number: int) -> list[RecordedComment]:
        return self.forge.comments("github", REPO, number)

    def plan_main(self) -> subprocess.CompletedProcess[str]:
        """The installed xce-plan on a fresh clone of main, against the shared store."""
        self.checks += 1
        where = self.root / f"check-{self.checks}"
        git.Repo.clone_from(self.origin, where)
        env = {"XCE_STATE_URL": self.state_url, "XCE_WORKDIR": self.runner.env["XCE_WORKDIR"]}
        return self.installed.run(["xce-plan", "."], where, env)

    def hosts(self) -> str:
        """The hosts the cluster's controller map holds, as xce-map shows them."""
        shown = self.installed.run(
            ["xce-map", "--db", str(self.cluster / "map.sqlite"), "show", "--kind", "host"],
            self.root,
        )  # fmt: skip
        assert shown.returncode == 0, shown.stdout + shown.stderr
        return shown.stdout

    @contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        start = time.monotonic()
        yield
        self.timings[phase] = round(time.monotonic() - start, 1)


def _ok(job: JobResult) -> JobResult:
    assert job.result == "success", job.log
    return job


# ---------------------------------------------------------------------------- setting up


def _point_providers_at(site: Path, cluster: Path) -> None:
    """The providers act on absolute paths outside every clone: one cluster for all jobs."""
    path = site / "providers.yaml"
    text = path.read_text()
    controller, base = "    kind: controller-map\n", "      base: fs\n"
    assert controller in text and base in text, text
    text = text.replace(controller, f"{controller}    params:\n      path: {cluster}/map.sqlite\n")
    path.write_text(text.replace(base, f"      base: {cluster}/fs\n"))
    (cluster / "fs").mkdir(parents=True)


def _site_repository(installed: Installed, root: Path, cluster: Path) -> Path:
    """`xce-init --ci github`, its providers pointed at the cluster in its first commit, pushed
    to a bare origin."""
    made = installed.run(["xce-init", "acme-site", "--ci", "github"], root)
    assert made.returncode == 0, made.stdout + made.stderr
    site = root / "acme-site"
    assert (site / WORKFLOW).is_file()
    _point_providers_at(site, cluster)
    repo = git.Repo(site)
    repo.index.add(["providers.yaml"])
    with repo.git.custom_environment(**IDENTITY):
        repo.git.commit("--amend", "--no-edit")
    origin = root / "origin.git"
    git.Repo.init(origin, bare=True, initial_branch="main")
    repo.create_remote("origin", str(origin))
    repo.git.push("origin", "main")
    return origin


def _runner_venv(installed: Installed, where: Path) -> Path:
    """A copy of the installed venv for $XCE_VENV: the install step runs `python3 -m venv` on
    it (adding pip, rewriting pyvenv.cfg), which must not touch the venv that other tests run
    from at the same time. Its scripts name the copy's python, as a venv made there would."""
    shutil.copytree(installed.venv, where, symlinks=True)
    old, new = str(installed.venv).encode(), str(where).encode()
    for path in [where / "pyvenv.cfg", *(where / "bin").iterdir()]:
        if path.is_file() and not path.is_symlink() and old in path.read_bytes():
            path.write_bytes(path.read_bytes().replace(old, new))
    return where


def _base_python(venv: Path) -> Path:
    """The interpreter the venv was made with: `python3 -m venv` must keep it."""
    config = dict(
        line.split(" = ", 1) for line in (venv / "pyvenv.cfg").read_text().splitlines() if line
    )
    return Path(config["home"], "python3")


def _runner_env(installed: Installed, root: Path) -> dict[str, str]:
    """A runner's environment: python3 and system tools, no xce-gitops on PATH (the install
    step must put it there), pip offline with the wheel's folder to find it in."""
    tools, home = root / "runner-tools", root / "runner-home"
    tools.mkdir()
    home.mkdir()
    (tools / "python3").symlink_to(_base_python(installed.venv))
    env = {
        "PATH": os.pathsep.join([str(tools), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "XCE_VENV": str(_runner_venv(installed, root / "runner-venv")),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(installed.wheel.parent),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_LOG": str(root / "pip.log"),  # what pip decided, although the step runs it --quiet
        # the self-hosted runner's folder for the embedded providers' memory (docs/ci.md)
        "XCE_WORKDIR": str(root / "cluster" / "workdir"),
    }
    assert shutil.which("xce-plan", path=env["PATH"]) is None
    return env


@contextmanager
def _state_store(backend: str, root: Path) -> Iterator[str]:
    """The store every job shares: a SQLite file outside the clones, or a fresh PostgreSQL
    schema (dropped afterwards)."""
    if backend == "sqlite":
        yield str(root / "state" / "xce.sqlite")
        return
    schema = f"xce_play_{secrets.token_hex(6)}"
    with psycopg.connect(pg_base_url(), autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            yield with_options(pg_base_url(), options=f"-csearch_path={schema}")
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def _play(installed: Installed, root: Path, forge: ForgeDouble, state_url: str) -> Play:
    cluster = root / "cluster"
    (root / "state").mkdir()
    origin = _site_repository(installed, root, cluster)
    env = _runner_env(installed, root)
    runner = ActionsRunner(
        root / "acme-site" / WORKFLOW, origin, root / "runs", repository=REPO,
        api_url=forge.github_url, token=forge.token, secrets={"XCE_STATE_URL": state_url},
        env=env, variables={"XCE_WORKDIR": env["XCE_WORKDIR"]},  # a runner's env or a variable
    )  # fmt: skip
    admin = git.Repo.clone_from(origin, root / "admin")
    return Play(installed, root, origin, admin, forge, runner, cluster, state_url)


# ---------------------------------------------------------------------------- the phases


def _installed_by_the_step(play: Play, job: JobResult) -> None:
    """The install step ran pip for the pinned version, and the commands came from there."""
    assert job.step("Install xce-gitops").exit_code == 0
    log = Path(play.runner.env["PIP_LOG"]).read_text()
    assert f"Requirement already satisfied: xce-gitops=={_version(play)}" in log, log[-2000:]
    assert (Path(play.runner.env["XCE_VENV"]) / "bin" / "pip").is_file()


def _version(play: Play) -> str:
    return play.installed.wheel.name.split("-")[1]


def _plan_pull_request(play: Play, number: int, branch: str, action: str) -> Run:
    """The pull request's run: only the plan job, which succeeds and keeps plan.json."""
    run = play.runner.pull_request(number, head=branch, action=action)
    assert [run.job(j).result for j in ("apply", "drift")] == ["skipped", "skipped"]
    _ok(run.job("plan"))
    assert (run.artifact("xce-plan") / "plan.json").is_file()
    return run


def _push(play: Play) -> JobResult:
    """The run after a push to main: only the apply job."""
    run = play.runner.push()
    assert [run.job(j).result for j in ("plan", "drift")] == ["skipped", "skipped"]
    return run.job("apply")


def _plan_md(run: Run) -> str:
    """plan.md of the artifact: the config diff first, then the plan."""
    text = (run.artifact("xce-plan") / "plan.md").read_text()
    config, cluster = text.find(CONFIG_DIFF), text.find(LIVE_PLAN)
    assert 0 <= config < cluster, text
    return text


def _sticky_comment(play: Play) -> Run:
    """(a) the plan job comments once; a second push updates that one comment."""
    play.push_branch("more-compute", "hosts: cn[01-08]", "hosts: cn[01-10]")
    first = _plan_pull_request(play, 1, "more-compute", "opened")
    job = first.job("plan")
    _installed_by_the_step(play, job)
    assert job.permissions == {"contents": "read", "pull-requests": "write"}
    plan_md = _plan_md(first)
    assert "host/cn[09-10]" in plan_md[: plan_md.find(LIVE_PLAN)]  # the config diff
    [comment] = play.comments(1)
    assert comment.body.startswith(STICKY.format("plan")) and plan_md.strip() in comment.body
    assert comment.updates == 0

    play.push_branch("more-compute", "hosts: cn[01-10]", "hosts: cn[01-12]")
    second = _plan_pull_request(play, 1, "more-compute", "synchronize")
    [updated] = play.comments(1)
    assert (updated.id, updated.updates) == (comment.id, 1)
    assert _plan_md(second).strip() in updated.body
    assert "host/cn[09-12]" in updated.body and "cn[09-10]" not in updated.body, updated.body
    return second


def _reviewed_plan_applied(play: Play, reviewed: Run) -> None:
    """(b) after merge the apply job applies exactly the plan of the last review, and a plan of
    main then has nothing to do."""
    body = json.loads((reviewed.artifact("xce-plan") / "plan.json").read_text())["body"]
    assert body["origin"]["store"]["label"] == play.state_url.split("?")[0]  # the shared store
    saved = body["plan"]
    play.merge(1, "more-compute")
    output = _ok(_push(play)).step(APPLY_STEP).output
    revision, digest = saved["revision"][:12], saved["desired_digest"].removeprefix("sha256:")
    assert f"Applying the plan reviewed at commit {revision} (desired {digest[:12]}" in output
    assert f"{len(saved['actions'])} done, 0 already done, 0 failed" in output, output
    assert "cn12" in play.hosts()
    check = play.plan_main()
    assert check.returncode == 0 and "No changes" in check.stdout, check.stdout + check.stderr


def _unreviewed_merge_is_refused(play: Play) -> None:
    """(c) two pull requests planned from the same base: the first merged and applied, the
    second merged after it is a config nobody reviewed: refused, nothing applied."""
    play.push_branch("more-login", "hosts: login[01-02]", "hosts: login[01-03]")
    play.push_branch("bigger-compute", "hosts: cn[01-12]", "hosts: cn[01-14]")
    _plan_pull_request(play, 2, "more-login", "opened")
    _plan_pull_request(play, 3, "bigger-compute", "opened")
    play.merge(2, "more-login")
    _ok(_push(play))
    assert "login03" in play.hosts()

    play.merge(3, "bigger-compute")
    refused = _push(play)
    assert refused.result == "failure", refused.log
    step = refused.step(APPLY_STEP)
    assert step.exit_code == 4, step.output
    assert "error[XCE770]: no reviewed plan matches the config being applied" in step.output
    assert "another change was merged after that review" in step.output, step.output
    assert any("No reviewed plan" in line for line in step.annotations), step.output
    assert "cn13" not in play.hosts()
    check = play.plan_main()
    assert check.returncode == 2 and "host/cn14" in check.stdout, check.stdout + check.stderr


def _stale_plan_is_reviewed_again(play: Play) -> None:
    """(d) the live map changed between review and merge: the apply exits 3, plans again and
    asks for a review on the merged pull request; a re-run applies the new plan."""
    play.push_branch("carol", "users: [alice, bob]", "users: [alice, bob, carol]", "storage.yaml")
    _plan_pull_request(play, 4, "carol", "opened")
    (play.cluster / "fs" / "shared" / "xce" / "carol").mkdir()  # made by hand meanwhile
    play.merge(4, "carol")
    stale = _push(play)
    assert stale.result == "failure", stale.log
    step = stale.step(APPLY_STEP)
    assert step.exit_code == 3, step.output
    assert "volume-dir/shared/carol changed since the plan was made" in step.output, step.output
    assert any("Stale plan" in line for line in step.annotations), step.output
    [plan, asked] = play.comments(4)
    assert plan.body.startswith(STICKY.format("plan"))
    assert asked.body.startswith(STICKY.format("apply")) and "host/cn14" in asked.body
    assert "went stale" in asked.body and "XCE822" in asked.body  # the reason, then the plan
    again = _ok(_push(play)).step(APPLY_STEP).output  # the re-run applies the re-recorded plan
    assert "create host/cn14" in again, again
    check = play.plan_main()
    assert check.returncode == 0, check.stdout + check.stderr


def _nightly_drift(play: Play) -> None:
    """The nightly job reports the hand-made folder of (d): not ours, so never touched."""
    run = play.runner.scheduled()
    assert [run.job(j).result for j in ("plan", "apply")] == ["skipped", "skipped"]
    _ok(run.job("drift"))
    report = run.artifact("xce-drift")
    assert "<html" in (report / "drift.html").read_text().lower()
    assert "co-managed  volume-dir/shared/carol" in (report / "drift.txt").read_text()


def test_the_pull_request_pipeline(installed: Installed, tmp_path: Path) -> None:
    # One play, about a minute: on the shared PostgreSQL state store a site's CI uses, when
    # there is one (the test command starts one); SQLite otherwise. Both stores run the
    # reviewed-plan paths in tests/apply/test_reviewed.py.
    backend = "postgresql" if os.environ.get("XCE_TEST_PG_URL") else "sqlite"
    with _state_store(backend, tmp_path) as state_url, ForgeDouble() as forge:
        play = _play(installed, tmp_path, forge, state_url)
        with play.timed("(a) sticky comment"):
            reviewed = _sticky_comment(play)
        with play.timed("(b) reviewed plan applied"):
            _reviewed_plan_applied(play, reviewed)
        with play.timed("(c) unreviewed merge refused"):
            _unreviewed_merge_is_refused(play)
        with play.timed("(d) stale plan reviewed again"):
            _stale_plan_is_reviewed_again(play)
        with play.timed("nightly drift"):
            _nightly_drift(play)
    print(f"pipeline play on {backend}: {play.timings}")
