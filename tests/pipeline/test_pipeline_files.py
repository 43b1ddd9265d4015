"""The pipeline files xce-init ships (docs/ci.md): they validate against GitHub's and GitLab's
own schemas (check-jsonschema's vendored copies, offline), hold what a reviewer of a pipeline
looks for (jobs, triggers, permissions, timeouts, one apply at a time, no expression inside a
script, the installed version pinned), are printed alone by ``xce-init --print-ci``, are never
read as site-config, and are the files docs/ci.md shows.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from compiler.cli.runner import product_version
from compiler.cmds.init import main
from compiler.compile import compile_site
from compiler.core.problems import Problems
from compiler.site_repo.create import SMALL_SITE, render_templates
from compiler.site_repo.pipeline import PATHS, Pipeline
from tests import guide

ROOT = Path(__file__).resolve().parents[2]
CHECK_JSONSCHEMA = Path(sys.executable).parent / "check-jsonschema"
SCHEMAS = {"github": "vendor.github-workflows", "gitlab": "vendor.gitlab-ci"}
CI_DOC = ROOT / "docs" / "ci.md"
# before a yaml block of docs/ci.md: the xce-init command that prints the block
DOC_MARKER = re.compile(r"<!--\s*xce-init (--print-ci [^>]*?)\s*-->")
GITHUB_EXPRESSION = "${{"


def load(text: str) -> Any:
    """YAML 1.2, as GitHub and GitLab read it (``on`` stays a key, not a boolean)."""
    return YAML(typ="safe").load(text)


def validate(schema: str, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CHECK_JSONSCHEMA), "--builtin-schema", schema, str(path)],
                          capture_output=True, text=True, timeout=120, check=False)


def print_ci(args: list[str]) -> tuple[int, str]:
    """``xce-init`` in this process: its exit code and what it printed (stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue() + err.getvalue()


@pytest.mark.parametrize("notify", [False, True], ids=["small-site", "notify"])
@pytest.mark.parametrize("ci", ["github", "gitlab"])
def test_the_files_validate_against_the_ci_schema(ci: str, notify: bool, tmp_path: Path) -> None:
    path = tmp_path / Path(PATHS[ci]).name
    path.write_text(Pipeline(ci=ci, notify=notify).render(ci))
    done = validate(SCHEMAS[ci], path)
    assert done.returncode == 0, done.stdout + done.stderr
    if ci == "github":  # and every job has a timeout
        done = validate("custom.github-workflows-require-timeout", path)
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("ci", "schema", "old", "new", "named"),
    [
        ("github", SCHEMAS["github"], "    runs-on:", "    runs_on:",
         "'runs-on' is a required property"),
        ("gitlab", SCHEMAS["gitlab"], "    when: always", "    when: sometimes", "sometimes"),
        ("github", "custom.github-workflows-require-timeout", "    timeout-minutes: 60\n", "",
         "timeout-minutes"),
    ],
    ids=["github-key", "gitlab-value", "github-no-timeout"],
)
def test_a_mangled_copy_is_rejected(
    ci: str, schema: str, old: str, new: str, named: str, tmp_path: Path
) -> None:
    text = Pipeline(ci=ci).render(ci)
    assert old in text
    path = tmp_path / "mangled.yml"
    path.write_text(text.replace(old, new, 1))
    done = validate(schema, path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert named in done.stdout + done.stderr


def _runs(workflow: dict[str, Any]) -> dict[str, list[str]]:
    """Each job's ``run:`` scripts, in order."""
    return {name: [step["run"] for step in job["steps"] if "run" in step]
            for name, job in workflow["jobs"].items()}


def _uses(job: dict[str, Any], action: str) -> dict[str, Any]:
    (step,) = [step for step in job["steps"] if step.get("uses", "").startswith(action)]
    return dict(step.get("with", {}))


def test_the_github_workflow_has_three_jobs_with_least_permissions() -> None:
    flow = load(Pipeline(ci="github", branch="trunk", notify=True).render("github"))
    assert set(flow["on"]) == {"pull_request", "push", "schedule", "workflow_dispatch"}
    assert flow["on"]["pull_request"]["branches"] == flow["on"]["push"]["branches"] == ["trunk"]
    assert flow["permissions"] == {}  # nothing unless a job asks
    assert flow["env"] == {"XCE_GITOPS_VERSION": product_version(), "XCE_SITE": ".",
                           "XCE_WORKDIR": "${{ vars.XCE_WORKDIR }}"}  # outside the checkout
    jobs = flow["jobs"]
    assert set(jobs) == {"plan", "apply", "drift", "bootstrap-plan", "bootstrap-apply"}
    # by hand only, on the applied branch (docs/ci.md, "Bootstrap and recovery")
    assert jobs["bootstrap-plan"]["if"] == ("github.event_name == 'workflow_dispatch' && "
                                            "github.ref == 'refs/heads/trunk'")
    assert jobs["bootstrap-apply"]["needs"] == "bootstrap-plan"
    assert jobs["bootstrap-apply"]["environment"] == jobs["apply"]["environment"]
    for name, event in (("plan", "pull_request"), ("apply", "push"), ("drift", "schedule")):
        assert jobs[name]["if"] == f"github.event_name == '{event}'"
        assert 0 < jobs[name]["timeout-minutes"] <= 60
        assert jobs[name]["env"]["XCE_STATE_URL"] == "${{ secrets.XCE_STATE_URL }}"
    assert jobs["plan"]["permissions"] == {"contents": "read", "pull-requests": "write"}
    assert jobs["apply"]["permissions"] == {"contents": "read", "pull-requests": "write"}
    assert jobs["drift"]["permissions"] == {"contents": "read"}
    assert jobs["apply"]["concurrency"] == {"group": "xce-gitops-apply",
                                            "cancel-in-progress": False}
    assert jobs["apply"]["environment"]
    assert _uses(jobs["plan"], "actions/checkout@")["fetch-depth"] == 0
    assert _uses(jobs["plan"], "actions/upload-artifact@")["name"] == "xce-plan"
    assert "xce-out/drift.html" in _uses(jobs["drift"], "actions/upload-artifact@")["path"]
    assert jobs["drift"]["env"]["XCE_SMTP_PASSWORD"] == "${{ secrets.XCE_SMTP_PASSWORD }}"


def test_the_github_jobs_run_the_reviewed_flow_without_expressions_in_scripts() -> None:
    runs = _runs(load(Pipeline(ci="github", notify=True).render("github")))
    for name, scripts in runs.items():
        assert all(GITHUB_EXPRESSION not in script for script in scripts), name
        assert 'python3 -m venv "$XCE_VENV"' in scripts[0]
        assert '"$XCE_VENV/bin/pip" install --quiet "xce-gitops==$XCE_GITOPS_VERSION"' in scripts[0]
        assert 'echo "$XCE_VENV/bin" >> "$GITHUB_PATH"' in scripts[0]
    plan = "\n".join(runs["plan"])
    assert 'xce-compile "$XCE_SITE" --check --format github' in plan
    assert re.search(r'xce-plan "\$XCE_SITE" --base "origin/\$GITHUB_BASE_REF" --record '
                     r'--branch "\$GITHUB_HEAD_REF" \\\s+'
                     r"--out xce-out/plan.json --full-plan-artifact xce-plan \\\s+"
                     r"--format markdown > xce-out/plan.md", plan)
    assert "xce-pr comment xce-out/plan.md " in plan  # its config diff holds the review
    assert plan.index("xce-pr comment") > plan.index("xce-plan") > plan.index("xce-compile")
    assert runs["plan"][-1].strip().endswith("exit 1; fi")  # what failed fails the job, last
    apply = "\n".join(runs["apply"])
    assert 'xce-apply --reviewed "$XCE_SITE" --lock-timeout 600' in apply
    assert ('xce-pr comment --commit "$GITHUB_SHA" --marker apply xce-out/stale.md '
            'xce-out/plan.md') in apply  # why it went stale, then the new plan
    assert "xce-plan" not in apply.split("xce-apply --reviewed")[0]  # never a fresh plan first
    assert 'xce-drift "$XCE_SITE" --notify --out xce-out/drift.html' in "\n".join(runs["drift"])


def test_the_small_site_s_nightly_job_does_not_mail() -> None:
    flow = load(Pipeline(ci="github").render("github"))
    drift = "\n".join(_runs(flow)["drift"])
    assert "xce-drift" in drift and "--notify" not in drift
    assert "XCE_SMTP_PASSWORD" not in flow["jobs"]["drift"]["env"]


def test_the_gitlab_pipeline_has_three_jobs_one_apply_at_a_time() -> None:
    pipe = load(Pipeline(ci="gitlab", notify=True).render("gitlab"))
    assert pipe["variables"]["XCE_GITOPS_VERSION"] == product_version()
    assert pipe["variables"]["XCE_SITE"] == "."
    jobs = {name: job for name, job in pipe.items() if isinstance(job, dict) and "script" in job}
    assert set(jobs) == {"xce-plan", "xce-apply", "xce-drift", "xce-bootstrap-plan",
                         "xce-bootstrap-apply"}
    rules = {name: [rule["if"] for rule in job["rules"]] for name, job in jobs.items()}
    by_hand = '$CI_PIPELINE_SOURCE == "web" && $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH'
    assert rules == {
        "xce-plan": ['$CI_PIPELINE_SOURCE == "merge_request_event"'],
        "xce-apply": ['$CI_PIPELINE_SOURCE == "push" && $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH'],
        "xce-drift": ['$CI_PIPELINE_SOURCE == "schedule"'],
        "xce-bootstrap-plan": [by_hand],
        "xce-bootstrap-apply": [by_hand],
    }
    assert jobs["xce-bootstrap-apply"]["rules"][0]["when"] == "manual"
    assert all(job["timeout"] for job in jobs.values())
    assert jobs["xce-apply"]["resource_group"] == "xce-apply"
    assert jobs["xce-apply"]["interruptible"] is False
    assert jobs["xce-plan"]["interruptible"] is True
    assert jobs["xce-plan"]["variables"]["GIT_DEPTH"] == 0
    assert jobs["xce-plan"]["allow_failure"] == {"exit_codes": [3]}  # an escalation: a warning
    assert jobs["xce-drift"]["allow_failure"] == {"exit_codes": [2]}  # drift: a warning
    for name in ("xce-plan", "xce-drift"):
        assert jobs[name]["artifacts"]["expire_in"] and jobs[name]["artifacts"]["when"] == "always"
    plan = "\n".join(jobs["xce-plan"]["script"])
    assert '--base "$CI_MERGE_REQUEST_DIFF_BASE_SHA" --record' in plan
    assert "xce-pr comment xce-out/plan.md " in plan  # its config diff holds the review
    apply = "\n".join(jobs["xce-apply"]["script"])
    assert 'xce-pr comment --commit "$CI_COMMIT_SHA" --marker apply' in apply
    assert '"$XCE_VENV/bin/pip" install --quiet "xce-gitops==$XCE_GITOPS_VERSION"' in "\n".join(
        pipe["default"]["before_script"])


def test_the_pre_commit_config_pins_the_installed_release() -> None:
    config = load(Pipeline(ci="pre-commit", site="site-config").render("pre-commit"))
    (repo,) = config["repos"]
    (hook,) = repo["hooks"]
    assert hook["id"] == "xce-compile"
    assert hook["entry"] == "xce-compile --check"
    assert hook["additional_dependencies"] == [f"xce-gitops=={product_version()}"]
    assert hook["args"] == ["site-config"]
    assert hook["pass_filenames"] is False
    manifest = load((ROOT / ".pre-commit-hooks.yaml").read_text())
    (shipped,) = manifest
    same = ("id", "entry", "language", "types", "pass_filenames")
    assert {key: shipped[key] for key in same} == {key: hook[key] for key in same}


def test_print_ci_prints_the_file_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out = print_ci(["--print-ci", "github", "--site", "site-config/", "--branch", "trunk"])
    assert code == 0
    assert out == Pipeline(ci="github", site="site-config", branch="trunk").render("github")
    assert load(out)["env"]["XCE_SITE"] == "site-config"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--print-ci", "github", "--site", "../other"], "error[XCE026]: --site '../other' is not"),
        (["--print-ci", "github", "--site", "/abs"], "error[XCE026]"),
        (["--print-ci", "github", "--branch", "a b"], "error[XCE027]: the branch 'a b' (--branch)"),
        (["--print-ci", "gitlab", "here"], "error[XCE020]: argument --print-ci: it prints a file "
         "and creates nothing: leave out DIR"),
        (["--print-ci", "gitlab", "--ci", "github"], "leave out --ci"),
        (["here", "--site", "x"], "error[XCE020]: argument --site: only with --print-ci"),
        (["--print-ci", "travis"], "error[XCE020]: argument --print-ci: invalid choice"),
    ],
)
def test_print_ci_refuses_what_it_cannot_write_plainly(
    args: list[str], expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out = print_ci(args)
    assert code == 1 and expected in out, out
    assert "Traceback" not in out and "version:" not in out
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("ci", ["github", "gitlab"])
def test_the_pipeline_files_are_never_read_as_site_config(ci: str, tmp_path: Path) -> None:
    pipeline = Pipeline(ci=ci)
    render_templates(tmp_path, {**SMALL_SITE, **pipeline.files()}, "demo", False, pipeline)
    problems = Problems()
    compiled, files = compile_site(tmp_path, problems)
    assert compiled is not None and not problems.errors, problems
    read = {f.abspath.resolve().relative_to(tmp_path.resolve()).as_posix()
            for f in files if f.abspath.resolve().is_relative_to(tmp_path.resolve())}
    assert read == set(SMALL_SITE)  # and none of the pipeline files
    # the same file where the loader does look is read, and is no site-config file
    (tmp_path / "pipeline.yml").write_text((tmp_path / PATHS[ci]).read_text())
    problems = Problems()
    compile_site(tmp_path, problems)
    assert any((p.file or "").endswith("pipeline.yml") for p in problems.errors), problems


def _doc_blocks() -> list[tuple[str, guide.Block]]:
    """The yaml blocks of docs/ci.md that follow an ``<!-- xce-init --print-ci … -->``
    marker, with the command's arguments."""
    text = CI_DOC.read_text(encoding="utf-8")
    lines = text.splitlines()
    found = []
    for block in guide.blocks(text):
        before = next(line for line in reversed(lines[:block.line - 2]) if line.strip())
        marker = DOC_MARKER.fullmatch(before.strip())
        if marker:
            found.append((marker[1], block))
    return found


def test_docs_ci_md_shows_the_files_xce_init_prints() -> None:
    """``XCE_UPDATE_DOCS=1`` rewrites the blocks with what the commands print."""
    blocks = _doc_blocks()
    assert sorted(args.split()[1] for args, _ in blocks) == ["github", "gitlab", "pre-commit"]
    lines = CI_DOC.read_text(encoding="utf-8").splitlines()
    stale = []
    for args, block in reversed(blocks):  # from the end, so earlier line numbers hold
        code, printed = print_ci(args.split())
        assert code == 0, printed
        if block.lines != printed.splitlines():
            stale.append(args)
            lines[block.line - 1:block.line - 1 + len(block.lines)] = printed.splitlines()
    if stale and os.environ.get(guide.UPDATE_ENV) == "1":
        CI_DOC.write_text("\n".join(lines) + "\n", encoding="utf-8")
    else:
        assert not stale, (f"docs/ci.md does not show what xce-init {', '.join(stale)} prints; "
                           f"rewrite it with {guide.UPDATE_ENV}=1 pytest {Path(__file__).name}")
