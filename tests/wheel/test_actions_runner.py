"""The local GitHub Actions runner the pipeline play uses (tests/wheel/actions_runner.py), on a
small workflow of its own: if it played a workflow differently from GitHub, the play would
prove nothing. A real bare origin repository, real bash, real git."""

from __future__ import annotations

import json
import re
from pathlib import Path

import git
import pytest

from tests.wheel.actions_runner import ACTOR, ActionsRunner, WorkflowError

WORKFLOW = """
name: sample
on:
  pull_request: {branches: [main]}
  push: {branches: [main]}
permissions: {contents: read}
env:
  LEVEL: workflow
  TOKEN: ${{ github.token }}
jobs:
  first:
    runs-on: ubuntu-latest
    timeout-minutes: 5
    env:
      LEVEL: job
      WHERE: ${{ env.LEVEL }}-and-${{ github.event_name }}
    steps:
      - uses: actions/checkout@v4
        with: {fetch-depth: 0}
      - id: setup
        name: setup
        run: |
          echo "FROM_ENV_FILE=set by setup" >> "$GITHUB_ENV"
          printf 'LINES<<EOF\\none\\ntwo\\nEOF\\n' >> "$GITHUB_ENV"
          mkdir -p "$RUNNER_TEMP/tools"
          printf '#!/bin/sh\\necho tool ran\\n' > "$RUNNER_TEMP/tools/xtool"
          chmod +x "$RUNNER_TEMP/tools/xtool"
          echo "$RUNNER_TEMP/tools" >> "$GITHUB_PATH"
          echo "answer=42" >> "$GITHUB_OUTPUT"
          echo "## summary line" >> "$GITHUB_STEP_SUMMARY"
      - name: use
        env:
          ANSWER: ${{ steps.setup.outputs.answer }}
          SECRET: ${{ secrets.SAMPLE }}
          VARIABLE: ${{ vars.KIND }}-${{ vars.UNSET }}
          LEVEL: step
        run: |
          xtool
          echo "answer=$ANSWER secret=$SECRET level=$LEVEL where=$WHERE var=$VARIABLE"
          echo "exported=$FROM_ENV_FILE lines=$(echo "$LINES" | wc -l) token=$TOKEN"
          echo "event=$GITHUB_EVENT_NAME ref=$GITHUB_REF"
          echo "base=$GITHUB_BASE_REF head=$GITHUB_HEAD_REF"
          python3 -c 'import json, os; print(json.load(open(os.environ["GITHUB_EVENT_PATH"])))'
          echo "ws=$GITHUB_WORKSPACE pwd=$PWD ci=$GITHUB_ACTIONS"
          git log --format=%s -1
          git rev-parse --verify -q origin/main
          cat a.txt b.txt
      - name: keep
        uses: actions/upload-artifact@v4
        with:
          name: kept
          path: |
            a.txt
            out/
  second:
    needs: first
    if: github.event_name == 'push'
    runs-on: ubuntu-latest
    steps:
      - run: echo "second ran"
"""

FAILING = """
on: workflow_dispatch
jobs:
  only:
    runs-on: ubuntu-latest
    steps:
      - name: no pipefail by default
        run: false | true
      - name: pipefail with shell bash
        shell: bash
        continue-on-error: true
        run: false | true
      - name: fails
        run: |
          echo before
          exit 3
          echo after
      - name: skipped after a failure
        run: echo never
      - name: on failure
        if: failure()
        run: echo "cleaning up"
      - name: not cancelled
        if: ${{ !cancelled() && github.event_name == 'WORKFLOW_DISPATCH' }}
        run: echo "still running"
      - name: always
        if: always()
        timeout-minutes: 0.01
        run: sleep 30
      - name: upload nothing
        if: always()
        uses: actions/upload-artifact@v4
        with: {name: none, path: missing.txt, if-no-files-found: error}
  after:
    needs: only
    runs-on: ubuntu-latest
    steps:
      - run: echo "needs a success"
  slow:
    runs-on: ubuntu-latest
    timeout-minutes: 0.02
    environment: production
    defaults: {run: {working-directory: sub}}
    steps:
      - run: mkdir sub
        working-directory: .
      - run: pwd; sleep 30
      - name: after the timeout
        run: echo never
      - name: cleanup
        if: always()
        run: echo "cleanup ran in $PWD"
"""


def _commit(repo: git.Repo, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        Path(repo.working_dir, name).write_text(text)
    repo.index.add(list(files))
    repo.index.commit(message, author=ACTOR, committer=ACTOR)


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A bare origin: main moved on after the branch `feature` left it."""
    bare = tmp_path / "origin.git"
    git.Repo.init(bare, bare=True, initial_branch="main")
    clone = git.Repo.clone_from(bare, tmp_path / "dev")
    _commit(clone, {"a.txt": "a1\n", "b.txt": "b1\n"}, "first")
    clone.git.push("origin", "HEAD:refs/heads/main")
    clone.git.checkout("-b", "feature")
    _commit(clone, {"b.txt": "b2 from feature\n"}, "feature change")
    clone.git.push("origin", "feature")
    clone.git.checkout("main")
    _commit(clone, {"a.txt": "a2 from main\n"}, "main moved on")
    clone.git.push("origin", "main")
    return bare


def _runner(tmp_path: Path, origin: Path, text: str) -> ActionsRunner:
    (tmp_path / "workflow.yml").write_text(text)
    return ActionsRunner(
        tmp_path / "workflow.yml", origin, tmp_path / "work", repository="acme/site",
        api_url="http://127.0.0.1:9/github", token="tok-123", secrets={"SAMPLE": "s3cret"},
        variables={"KIND": "sample"},
    )  # fmt: skip


def test_a_pull_request_runs_on_the_merge_with_env_files_path_and_outputs(
    tmp_path: Path, origin: Path
) -> None:
    run = _runner(tmp_path, origin, WORKFLOW).pull_request(7, head="feature")
    assert list(run.jobs) == ["first", "second"]
    first = run.job("first")
    assert first.result == "success", first.log
    assert run.job("second").result == "skipped"  # its if: is for push
    out = first.step("use").output
    assert "tool ran" in out  # $GITHUB_PATH
    assert "answer=42 secret=s3cret level=step where=workflow-and-pull_request var=sample-" in out
    assert "exported=set by setup lines=2 token=tok-123" in out
    assert "event=pull_request ref=refs/pull/7/merge\nbase=main head=feature" in out
    assert "'number': 7" in out
    assert f"ws={first.workspace} pwd={first.workspace} ci=true" in out
    # the merge of the head into the base, with the full history
    assert "a2 from main\nb2 from feature\n" in out
    assert git.Repo(origin).commit("main").hexsha in out  # origin/main with fetch-depth 0
    assert len(git.Repo(first.workspace).head.commit.parents) == 2
    assert first.summary == "## summary line\n"
    assert first.permissions == {"contents": "read"}
    assert (run.artifact("kept") / "a.txt").read_text() == "a2 from main\n"
    event = json.loads((run.folder / "event.json").read_text())
    assert event["pull_request"]["head"]["sha"] == git.Repo(origin).commit("feature").hexsha


def test_a_push_runs_the_branch_and_the_jobs_that_need_it(tmp_path: Path, origin: Path) -> None:
    runner = _runner(tmp_path, origin, WORKFLOW)
    run = runner.push("main")
    assert [job.result for job in run.jobs.values()] == ["success", "success"], run.job("first").log
    assert git.Repo(run.job("first").workspace).active_branch.name == "main"
    assert "second ran" in run.job("second").steps[0].output
    assert runner.push("feature").jobs == {}  # push: branches: [main]


def test_a_failing_step_fails_the_job(tmp_path: Path, origin: Path) -> None:
    run = _runner(tmp_path, origin, FAILING).scheduled("workflow_dispatch")
    only = run.job("only")
    outcomes = {step.name: (step.outcome, step.conclusion, step.exit_code) for step in only.steps}
    assert outcomes == {
        "no pipefail by default": ("success", "success", 0),
        "pipefail with shell bash": ("failure", "success", 1),
        "fails": ("failure", "failure", 3),
        "skipped after a failure": ("skipped", "skipped", None),
        "on failure": ("success", "success", 0),
        "not cancelled": ("success", "success", 0),
        "always": ("failure", "failure", -9),  # killed at its timeout
        "upload nothing": ("failure", "failure", 1),
    }
    assert only.step("fails").output == "before\n"
    assert "timed out" in only.step("always").output
    assert "No files were found" in only.step("upload nothing").output
    assert only.result == "failure"
    assert run.job("after").result == "skipped"
    slow = run.job("slow")  # past the job's timeout: cancelled, only always() steps run
    assert [step.outcome for step in slow.steps] == ["success", "failure", "skipped", "success"]
    assert slow.result == "cancelled"
    assert slow.steps[1].output.startswith(f"{slow.workspace}/sub\n")
    assert f"cleanup ran in {slow.workspace}/sub" in slow.step("cleanup").output


def test_a_shallow_checkout_has_no_base_branch(tmp_path: Path, origin: Path) -> None:
    shallow = WORKFLOW.replace("with: {fetch-depth: 0}", "with: {persist-credentials: false}")
    first = _runner(tmp_path, origin, shallow).pull_request(8, head="feature").job("first")
    assert first.result == "failure"
    assert first.step("use").exit_code == 1  # git rev-parse origin/main
    assert git.Repo(first.workspace).git.rev_list("--count", "HEAD") == "1"


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("uses: actions/checkout@v4", "uses: actions/cache@v4", "not emulated"),
        ("xtool\n", "echo ${{ github.head_ref }}\n", "inside run:"),
        ("${{ secrets.SAMPLE }}", "${{ toJSON(secrets) }}", "toJSON() is not supported"),
        ("${{ secrets.SAMPLE }}", "${{ inputs.SAMPLE }}", "context 'inputs.SAMPLE'"),
        ("timeout-minutes: 5", "strategy: {matrix: {a: [1]}}", "strategy not supported"),
        ("push: {branches: [main]}", "push: {tags: [v*]}", "on.push: tags not supported"),
        ("run: echo \"second ran\"", "shell: pwsh\n        run: dir", "shell 'pwsh'"),
    ],
)
def test_what_the_runner_does_not_play_is_refused(
    tmp_path: Path, origin: Path, old: str, new: str, message: str
) -> None:
    assert old in WORKFLOW
    with pytest.raises(WorkflowError, match=re.escape(message)):
        _runner(tmp_path, origin, WORKFLOW.replace(old, new, 1))
