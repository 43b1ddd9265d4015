"""A small local runner of GitHub Actions jobs, for tests only: it is not GitHub's runner.

It plays a workflow file the way GitHub would for one event, so a test can run the product's
pipeline for real (bash steps, a real git checkout, artifacts) against a bare origin
repository. It supports only what that pipeline needs and refuses everything else with a
`WorkflowError`, so the pipeline cannot come to depend on a feature this play never checks:

- triggers `pull_request` (branches, types), `push` (branches), `schedule`,
  `workflow_dispatch`; job-level `if:`, `needs:` order;
- `env:` merged workflow < job < `$GITHUB_ENV` < step; expressions `${{ secrets.NAME }}`,
  `${{ github.token }}`, `${{ github.<field> }}`, `${{ vars.NAME }}`, `${{ env.X }}` and
  `${{ steps.<id>.outputs.X / outcome / conclusion }}` in `env:`, `with:`, `if:`, names and
  `concurrency:`; operators `== != && || !` and parentheses; status functions `always()`,
  `success()`, `failure()`, `cancelled()` in `if:`; none inside `run:` scripts;
- `run:` steps with `bash --noprofile --norc -eo pipefail {0}`; `GITHUB_ENV`, `GITHUB_PATH`,
  `GITHUB_OUTPUT`, `GITHUB_STEP_SUMMARY` honoured between steps; `timeout-minutes` (job and
  step), `continue-on-error`, `working-directory`;
- `uses:` only `actions/checkout@v4` (a real fetch from the origin; a pull request checks out
  GitHub's `refs/pull/N/merge`, the merge of its head into its base), `actions/upload-artifact@v4`
  (a copy into the run's artifacts folder) and `actions/setup-python@v5` (nothing: the runner's
  Python is used).

Unlike GitHub: the workflow file is the one given (GitHub reads it from the event's commit),
jobs run one after another (so `concurrency:` is only checked), and secrets are not masked in
the output, so a test can see a leak.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import git
from ruamel.yaml import YAML

from tests.git_identity import identity

Value = str | int | float | bool | None
Node = tuple[Any, ...]
DEFAULT_TIMEOUT_MINUTES = 360
ACTOR = git.Actor("github-actions", "actions@github.invalid")


class WorkflowError(Exception):
    """The workflow uses something this runner does not support (nor check), or is wrong."""


# ---------------------------------------------------------------------------- expressions

_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>-?\d+(?:\.\d+)?)"
    r"|(?P<op>==|!=|&&|\|\||!|\(|\))"
    r"|(?P<name>[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*))"
)
_STATUS_FUNCTIONS = ("always", "success", "failure", "cancelled")
_ROOTS = ("secrets", "vars", "github", "env", "steps")
_EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.S)


def _tokens(source: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    at = 0
    while source[at:].strip():
        match = _TOKEN.match(source, at)
        if not match:
            raise WorkflowError(f"expression {source!r}: cannot read {source[at:]!r}")
        kind = match.lastgroup or ""
        found.append((kind, match.group(kind)))
        at = match.end()
    return found


class _Parser:
    """Recursive descent over the few operators the pipeline may use."""

    def __init__(self, source: str, status: bool) -> None:
        self.source, self.status = source, status
        self.tokens = _tokens(source)
        self.at = 0

    def parse(self) -> Node:
        node = self._or()
        if self.at != len(self.tokens):
            raise WorkflowError(f"expression {self.source!r}: unexpected {self._peek()!r}")
        return node

    def _peek(self) -> str:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else ""

    def _take(self, text: str) -> bool:
        if self._peek() == text and self.tokens[self.at][0] == "op":
            self.at += 1
            return True
        return False

    def _or(self) -> Node:
        node = self._and()
        while self._take("||"):
            node = ("or", node, self._and())
        return node

    def _and(self) -> Node:
        node = self._not()
        while self._take("&&"):
            node = ("and", node, self._not())
        return node

    def _not(self) -> Node:
        if self._take("!"):
            return ("not", self._not())
        node = self._primary()
        for op in ("==", "!="):
            if self._take(op):
                return (op, node, self._primary())
        return node

    def _primary(self) -> Node:
        if self._take("("):
            node = self._or()
            if not self._take(")"):
                raise WorkflowError(f"expression {self.source!r}: missing ')'")
            return node
        if self.at == len(self.tokens):
            raise WorkflowError(f"expression {self.source!r} ends too early")
        kind, text = self.tokens[self.at]
        self.at += 1
        if kind == "str":
            return ("lit", text[1:-1].replace("''", "'"))
        if kind == "num":
            return ("lit", float(text) if "." in text else int(text))
        if kind == "name":
            return self._name(text)
        raise WorkflowError(f"expression {self.source!r}: unexpected {text!r}")

    def _name(self, text: str) -> Node:
        literals: dict[str, Value] = {"true": True, "false": False, "null": None}
        if text in literals:
            return ("lit", literals[text])
        if self._take("("):
            if text not in _STATUS_FUNCTIONS or not self.status or not self._take(")"):
                raise WorkflowError(f"expression {self.source!r}: {text}() is not supported here")
            return ("call", text)
        parts = text.split(".")
        if parts[0] not in _ROOTS or len(parts) < 2:
            raise WorkflowError(
                f"expression {self.source!r}: the context {text!r} is not supported"
            )
        return ("ref", *parts)


@dataclass
class Context:
    """What expressions can see: the github context, env, secrets, earlier steps, job status."""

    github: dict[str, Any]
    secrets: Mapping[str, str]
    env: dict[str, str] = field(default_factory=dict)
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)
    status: str = "success"  # success, failure or cancelled
    variables: Mapping[str, str] = field(default_factory=dict)  # the vars context


def _truthy(value: Value) -> bool:
    return value not in ("", 0, None, False)


def _text(value: Value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _equal(left: Value, right: Value) -> bool:
    """GitHub compares strings ignoring case; other kinds by their text."""
    return _text(left).casefold() == _text(right).casefold()


def _lookup(parts: tuple[str, ...], ctx: Context) -> Value:
    root, *path = parts
    if root in ("secrets", "vars"):
        return (ctx.secrets if root == "secrets" else ctx.variables).get(path[0], "")
    if root == "env":
        return ctx.env.get(path[0], "")
    here: Any = {"github": ctx.github, "steps": ctx.steps}[root]
    if root == "github" and path[0] not in ctx.github:
        raise WorkflowError(f"github.{path[0]} is not a field of the github context")
    for part in path:
        here = here.get(part) if isinstance(here, dict) else None
    value: Value = None if isinstance(here, dict | list) else here
    return value


def _evaluate(node: Node, ctx: Context) -> Value:
    kind = node[0]
    if kind == "lit":
        literal: Value = node[1]
        return literal
    if kind == "ref":
        return _lookup(node[1:], ctx)
    if kind == "call":
        return bool(node[1] == "always" or node[1] == ctx.status)
    if kind == "not":
        return not _truthy(_evaluate(node[1], ctx))
    left = _evaluate(node[1], ctx)
    if kind == "or":
        return left if _truthy(left) else _evaluate(node[2], ctx)
    if kind == "and":
        return _evaluate(node[2], ctx) if _truthy(left) else left
    same = _equal(left, _evaluate(node[2], ctx))
    return same if kind == "==" else not same


def _has_status_call(node: Node) -> bool:
    return node[0] == "call" or any(isinstance(n, tuple) and _has_status_call(n) for n in node)


def parse_condition(source: Any) -> Node:
    """An `if:` as an expression; without a status function it means `success() && (...)`."""
    text = _text(source).strip()
    whole = re.fullmatch(r"\$\{\{(.*)\}\}", text, re.S)
    text = whole.group(1) if whole else text
    if "${{" in text:
        raise WorkflowError(f"if: {source!r} mixes ${{{{ }}}} with text")
    node = _Parser(text, status=True).parse()
    return node if _has_status_call(node) else ("and", ("call", "success"), node)


def check_template(text: Any) -> None:
    """Refuse a `${{ }}` this runner would not substitute, before anything runs."""
    for match in _EXPRESSION.finditer(_text(text)):
        _Parser(match.group(1), status=False).parse()


def substitute(text: Any, ctx: Context) -> str:
    """A value with each `${{ expression }}` replaced by its text."""

    def one(match: re.Match[str]) -> str:
        return _text(_evaluate(_Parser(match.group(1), status=False).parse(), ctx))

    return _EXPRESSION.sub(one, _text(text))


def condition_holds(source: Any, ctx: Context) -> bool:
    return _truthy(_evaluate(parse_condition(source), ctx))


# ---------------------------------------------------------------------------- the workflow

_WORKFLOW_KEYS = {"name", "run-name", "on", "env", "jobs", "permissions", "concurrency", "defaults"}
_JOB_KEYS = {
    "name",
    "runs-on",
    "needs",
    "if",
    "env",
    "steps",
    "timeout-minutes",
    "permissions",
    "concurrency",
    "continue-on-error",
    "defaults",
    "environment",  # a deployment environment: its protection rules are GitHub's, not played
}
_STEP_KEYS = {
    "name",
    "id",
    "if",
    "run",
    "uses",
    "with",
    "env",
    "shell",
    "working-directory",
    "timeout-minutes",
    "continue-on-error",
}
_TRIGGERS: dict[str, set[str]] = {
    "pull_request": {"branches", "types"},
    "push": {"branches"},
    "workflow_dispatch": set(),
}
_PR_TYPES = ("opened", "synchronize", "reopened")
# what `shell:` runs (GitHub's commands): none given is `bash -e`, without pipefail
_SHELLS: dict[str | None, list[str]] = {
    None: ["bash", "-e"],
    "bash": ["bash", "--noprofile", "--norc", "-eo", "pipefail"],
}


def _triggers(on: Any) -> dict[str, Any]:
    """`on:` as {event: its filters}: a string, a list or a mapping."""
    if isinstance(on, str):
        return {on: None}
    if isinstance(on, list):
        return dict.fromkeys(on)
    if isinstance(on, dict):
        return dict(on)
    raise WorkflowError(f"on: {on!r} is not an event, a list or a mapping")


def _check_keys(what: str, spec: Any, allowed: set[str]) -> None:
    if not isinstance(spec, dict):
        raise WorkflowError(f"{what} is not a mapping: {spec!r}")
    unknown = sorted(set(spec) - allowed)
    if unknown:
        raise WorkflowError(f"{what}: {', '.join(unknown)} not supported by this runner")


def _check_triggers(on: Any) -> None:
    for event, filters in _triggers(on).items():
        if event == "schedule":
            if not isinstance(filters, list) or not all("cron" in item for item in filters):
                raise WorkflowError(f"on.schedule: {filters!r} is not a list of crons")
        elif event not in _TRIGGERS:
            raise WorkflowError(f"on: the event {event!r} is not supported by this runner")
        elif filters is not None:
            _check_keys(f"on.{event}", filters, _TRIGGERS[event])


def _check_step(where: str, step: Any) -> None:
    _check_keys(where, step, _STEP_KEYS)
    if ("run" in step) == ("uses" in step):
        raise WorkflowError(f"{where}: a step has either run: or uses:")
    if "run" in step:
        if "${{" in str(step["run"]):
            raise WorkflowError(f"{where}: ${{{{ }}}} inside run: (pass values through env:)")
        if step.get("shell") not in _SHELLS:
            raise WorkflowError(f"{where}: shell {step['shell']!r} is not supported")
    elif step["uses"] not in _ACTIONS:
        raise WorkflowError(f"{where}: uses {step['uses']!r} is not emulated by this runner")
    else:
        _check_keys(f"{where}.with", step.get("with") or {}, _ACTIONS[step["uses"]][0])
    if "if" in step:
        parse_condition(step["if"])
    for key in ("name", "env", "with"):
        for value in (step.get(key) or {}).values() if key != "name" else [step.get(key)]:
            check_template(value)


def _run_defaults(spec: dict[str, Any]) -> dict[str, Any]:
    return dict((spec.get("defaults") or {}).get("run") or {})


def _concurrency_group(spec: dict[str, Any]) -> Any:
    concurrency = spec.get("concurrency")
    return concurrency.get("group") if isinstance(concurrency, dict) else concurrency


def _check_defaults(where: str, spec: dict[str, Any]) -> None:
    _check_keys(f"{where}.defaults", spec.get("defaults") or {}, {"run"})
    defaults = _run_defaults(spec)
    _check_keys(f"{where}.defaults.run", defaults, {"shell", "working-directory"})
    if defaults.get("shell") not in _SHELLS:
        raise WorkflowError(f"{where}.defaults.run.shell {defaults['shell']!r} is not supported")


def _check_job(job_id: str, job: Any) -> None:
    _check_keys(f"jobs.{job_id}", job, _JOB_KEYS)
    if "if" in job:
        parse_condition(job["if"])
    for value in (job.get("env") or {}).values():
        check_template(value)
    _check_defaults(f"jobs.{job_id}", job)
    check_template(_concurrency_group(job))
    for index, step in enumerate(job.get("steps") or []):
        _check_step(f"jobs.{job_id}.steps[{index}]", step)


def load_workflow(path: Path) -> dict[str, Any]:
    """The workflow file, checked: everything in it is something this runner plays."""
    workflow = YAML(typ="safe", pure=True).load(path.read_text())  # YAML 1.2: `on` is a key
    _check_keys(str(path), workflow, _WORKFLOW_KEYS)
    _check_triggers(workflow.get("on"))
    for value in (workflow.get("env") or {}).values():
        check_template(value)
    _check_defaults("the workflow", workflow)
    check_template(_concurrency_group(workflow))
    for job_id, job in (workflow.get("jobs") or {}).items():
        _check_job(job_id, job)
    return dict(workflow)


# ---------------------------------------------------------------------------- results


@dataclass(frozen=True)
class StepResult:
    """One step as the job's log shows it: exit_code None when it did not run a process."""

    name: str
    id: str | None
    outcome: str  # success, failure or skipped
    conclusion: str  # the outcome after continue-on-error
    exit_code: int | None
    output: str
    seconds: float = 0.0

    @property
    def annotations(self) -> list[str]:
        """The workflow commands that make annotations (`::warning file=...::msg`)."""
        return re.findall(r"^::(?:error|warning|notice)\b.*$", self.output, re.M)


@dataclass(frozen=True)
class JobResult:
    """A job of a run: its result (success, failure, cancelled or skipped) and its steps."""

    id: str
    result: str
    steps: list[StepResult]
    workspace: Path
    summary: str
    permissions: Any

    def step(self, name: str) -> StepResult:
        """The step with this id or name (or whose name starts with it)."""
        for step in self.steps:
            if name in (step.id, step.name) or step.name.startswith(name):
                return step
        raise KeyError(f"job {self.id} has no step {name!r}: {[s.name for s in self.steps]}")

    @property
    def log(self) -> str:
        return "\n".join(
            f"--- {s.name}: {s.outcome} (exit {s.exit_code}, {s.seconds}s)\n{s.output}"
            for s in self.steps
        )


@dataclass(frozen=True)
class Event:
    """What triggered a run, with the values GitHub gives for it."""

    name: str
    ref: str
    sha: str
    payload: dict[str, Any]
    base_ref: str = ""
    head_ref: str = ""

    @property
    def branch(self) -> str:
        """The branch the event is for: a pull request's base, a push's branch."""
        return self.base_ref or self.ref.removeprefix("refs/heads/")


@dataclass(frozen=True)
class Run:
    """One workflow run: the jobs the event triggered (in order) and the uploaded artifacts."""

    event: Event
    folder: Path
    jobs: dict[str, JobResult]

    @property
    def artifacts(self) -> Path:
        return self.folder / "artifacts"

    def job(self, job_id: str) -> JobResult:
        assert job_id in self.jobs, f"job {job_id!r} did not run: {sorted(self.jobs)}"
        return self.jobs[job_id]

    def artifact(self, name: str) -> Path:
        folder = self.artifacts / name
        assert folder.is_dir(), f"no artifact {name!r} in {sorted(os.listdir(self.artifacts))}"
        return folder


# ---------------------------------------------------------------------------- steps


def _read_file_command(path: Path) -> dict[str, str]:
    """`NAME=value` and `NAME<<DELIMITER` ... `DELIMITER` lines, as GitHub reads them."""
    values: dict[str, str] = {}
    lines = path.read_text().splitlines() if path.exists() else []
    at = 0
    while at < len(lines):
        line = lines[at]
        heredoc = re.fullmatch(r"([^=<]+)<<(.+)", line)
        if heredoc:
            name, delimiter = heredoc.groups()
            end = lines.index(delimiter, at + 1) if delimiter in lines[at + 1 :] else -1
            if end < 0:
                raise WorkflowError(f"{path.name}: {name}<<{delimiter} is never closed")
            values[name] = "\n".join(lines[at + 1 : end])
            at = end
        elif "=" in line:
            name, value = line.split("=", 1)
            values[name] = value
        elif line.strip():
            raise WorkflowError(f"{path.name}: invalid line {line!r}")
        at += 1
    return values


def _bash(command: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int, str]:
    """Run the step's script; past its timeout its whole process group is killed."""
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=max(timeout, 0.001))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        return -signal.SIGKILL, f"{output}##[error]The action has timed out.\n"
    return proc.returncode, output


def _search_root(workspace: Path, pattern: str) -> Path:
    """The folder a path pattern searches from: its part before the first wildcard."""
    fixed: list[str] = []
    for part in Path(pattern).parts:
        if any(c in part for c in "*?["):
            return workspace / Path(*fixed) if fixed else workspace
        fixed.append(part)
    path = workspace / pattern
    return path if path.is_dir() else path.parent


def _artifact_files(workspace: Path, patterns: list[str], hidden: bool) -> tuple[Path, list[Path]]:
    """The files the patterns name (folders: their files), and the root they are kept under:
    the search paths' least common ancestor, as upload-artifact@v4 does."""
    files: list[Path] = []
    for pattern in patterns:
        found = (
            workspace.glob(pattern) if any(c in pattern for c in "*?[") else [workspace / pattern]
        )
        for path in found:
            files += sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else []
            files += [path] if path.is_file() else []
    root = Path(os.path.commonpath([_search_root(workspace, p) for p in patterns]))
    if not hidden:
        files = [f for f in files if not any(p.startswith(".") for p in f.relative_to(root).parts)]
    return root, sorted(set(files))


def _upload_artifact(job: _Job, inputs: dict[str, str]) -> tuple[int, str]:
    name = inputs.get("name") or "artifact"
    patterns = [line.strip() for line in inputs.get("path", "").splitlines() if line.strip()]
    if not patterns:
        return 1, "##[error]Input required and not supplied: path\n"
    hidden = inputs.get("include-hidden-files", "false") == "true"
    root, files = _artifact_files(job.workspace, patterns, hidden)
    if not files:
        missing = inputs.get("if-no-files-found") or "warn"
        message = f"No files were found with the provided path: {' '.join(patterns)}."
        return (1, f"##[error]{message}\n") if missing == "error" else (0, f"{message}\n")
    dest = job.run_folder / "artifacts" / name
    if dest.exists() and inputs.get("overwrite", "false") != "true":
        return 1, f"##[error]an artifact with the name {name!r} already exists\n"
    shutil.rmtree(dest, ignore_errors=True)
    for path in files:
        target = dest / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    return 0, f"Uploaded artifact {name!r}: {len(files)} file(s)\n"


def _checkout(job: _Job, inputs: dict[str, str]) -> tuple[int, str]:
    """What actions/checkout@v4 does: fetch (all branches and tags with fetch-depth 0, else
    only the commit, shallow) and check out the event's commit (a pull request: its merge)."""
    depth = int(inputs.get("fetch-depth") or 1)
    event, ws = job.event, job.workspace
    repo = git.Repo.init(ws)
    repo.create_remote("origin", job.runner.origin.resolve().as_uri())
    pull = event.ref.startswith("refs/pull/")
    target = (
        f"refs/remotes/{event.ref.removeprefix('refs/')}"
        if pull
        else (f"refs/remotes/origin/{event.branch}")
    )
    if depth == 0:
        repo.git.fetch("--prune", "--tags", "origin", "+refs/heads/*:refs/remotes/origin/*")
        if pull:
            repo.git.fetch("origin", f"+{event.sha}:{target}")
    else:
        repo.git.fetch("--no-tags", f"--depth={depth}", "origin", f"+{event.sha}:{target}")
    if pull:
        repo.git.checkout("--force", target)
    else:
        repo.git.checkout("--force", "-B", event.branch, target)
    return 0, f"Checked out {event.sha} ({target}, fetch-depth {depth})\n"


def _setup_python(job: _Job, inputs: dict[str, str]) -> tuple[int, str]:
    return 0, "setup-python: the runner's python3 is used\n"


Action = Callable[["_Job", dict[str, str]], tuple[int, str]]
_ACTIONS: dict[str, tuple[set[str], Action]] = {
    "actions/checkout@v4": ({"fetch-depth", "persist-credentials"}, _checkout),
    "actions/upload-artifact@v4": (
        {
            "name",
            "path",
            "if-no-files-found",
            "retention-days",
            "include-hidden-files",
            "overwrite",
            "compression-level",
        },
        _upload_artifact,
    ),
    "actions/setup-python@v5": ({"python-version"}, _setup_python),
}


# ---------------------------------------------------------------------------- jobs


def _needs(job: dict[str, Any]) -> list[str]:
    needs = job.get("needs") or []
    return [needs] if isinstance(needs, str) else list(needs)


def _flag(value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return bool(value)
    if str(value) not in ("true", "false"):
        raise WorkflowError(f"continue-on-error: {value!r} is not true or false")
    return str(value) == "true"


_FILE_COMMANDS = ("GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY")


class _Job:
    """One job on a fresh runner: its own workspace, temp folder, env and file commands."""

    def __init__(self, runner: ActionsRunner, run_folder: Path, event: Event, job_id: str) -> None:
        self.runner, self.run_folder, self.event, self.id = runner, run_folder, event, job_id
        self.spec: dict[str, Any] = runner.workflow["jobs"][job_id]
        self.workspace = run_folder / job_id / runner.repository.split("/")[1]
        self.temp = run_folder / job_id / "_temp"
        for folder in (self.workspace, self.temp / "_runner_file_commands"):
            folder.mkdir(parents=True)
        github = runner.github_context(event, self.workspace, job_id)
        self.ctx = Context(github, runner.secrets, variables=runner.variables)
        workflow_env = self._env_map(runner.workflow.get("env"), {})
        self.job_env = {**workflow_env, **self._env_map(self.spec.get("env"), workflow_env)}
        self.exported: dict[str, str] = {}  # from $GITHUB_ENV
        self.paths: list[str] = []  # from $GITHUB_PATH, the newest first
        self.summary: list[str] = []
        self.minutes = float(self.spec.get("timeout-minutes", DEFAULT_TIMEOUT_MINUTES))
        self.deadline = time.monotonic() + 60 * self.minutes
        self.defaults = {**_run_defaults(runner.workflow), **_run_defaults(self.spec)}

    def _env_map(self, spec: Any, env: dict[str, str]) -> dict[str, str]:
        ctx = Context(
            self.ctx.github,
            self.ctx.secrets,
            dict(env),
            self.ctx.steps,
            variables=self.ctx.variables,
        )
        return {str(k): substitute(v, ctx) for k, v in (spec or {}).items()}

    def run(self) -> JobResult:
        """The steps in order; the job's log is also kept beside its workspace (log.txt)."""
        steps = [self._step(index, spec) for index, spec in enumerate(self.spec.get("steps", []))]
        permissions = self.spec.get("permissions", self.runner.workflow.get("permissions"))
        result = JobResult(
            self.id, self.ctx.status, steps, self.workspace, "".join(self.summary), permissions
        )
        (self.workspace.parent / "log.txt").write_text(result.log)
        return result

    def _step(self, index: int, spec: dict[str, Any]) -> StepResult:
        self.ctx.env = {**self.job_env, **self.exported}
        step_id = spec.get("id")
        name = (
            substitute(spec["name"], self.ctx)
            if "name" in spec
            else (
                f"Run {spec['uses']}"
                if "uses" in spec
                else f"Run {spec['run'].strip().splitlines()[0]}"
            )
        )
        if not condition_holds(spec.get("if", "success()"), self.ctx):
            result = StepResult(name, step_id, "skipped", "skipped", None, "")
        else:
            start = time.monotonic()
            code, output = self._execute(index, spec)
            if time.monotonic() >= self.deadline and self.ctx.status != "cancelled":
                self.ctx.status = "cancelled"
                output += f"##[error]The job has exceeded its {self.minutes:g} minutes.\n"
            outcome = "success" if code == 0 else "failure"
            failed = outcome == "failure" and not _flag(spec.get("continue-on-error"))
            if failed and self.ctx.status == "success":
                self.ctx.status = "failure"
            conclusion = "failure" if failed else "success"
            seconds = round(time.monotonic() - start, 2)
            result = StepResult(name, step_id, outcome, conclusion, code, output, seconds)
        if step_id:
            self.ctx.steps.setdefault(step_id, {"outputs": {}})
            self.ctx.steps[step_id].update(outcome=result.outcome, conclusion=result.conclusion)
        return result

    def _timeout(self, spec: dict[str, Any]) -> float:
        """Seconds the step may run: its own timeout, within what is left of the job's
        (after a cancellation, a step that still runs gets its own or five minutes)."""
        own = 60 * float(spec["timeout-minutes"]) if "timeout-minutes" in spec else None
        if self.ctx.status == "cancelled":
            return own or 300.0
        left = self.deadline - time.monotonic()
        return min(left, own) if own is not None else left

    def _execute(self, index: int, spec: dict[str, Any]) -> tuple[int, str]:
        files = {
            name: self.temp / "_runner_file_commands" / f"{name}_{index}" for name in _FILE_COMMANDS
        }
        for path in files.values():
            path.touch()
        step_env = self._env_map(spec.get("env"), self.ctx.env)
        if "run" in spec:
            script = self.temp / f"step_{index}.sh"
            script.write_text(spec["run"])
            shell = _SHELLS[spec.get("shell", self.defaults.get("shell"))]
            folder = spec.get("working-directory", self.defaults.get("working-directory", "."))
            env = self._process_env(step_env, files, spec.get("id") or "__run")
            code, output = _bash(
                [*shell, str(script)], self.workspace / folder, env, self._timeout(spec)
            )
        else:
            inputs = {str(k): substitute(v, self.ctx) for k, v in (spec.get("with") or {}).items()}
            try:
                code, output = _ACTIONS[spec["uses"]][1](self, inputs)
            except git.GitCommandError as err:
                code, output = 1, f"##[error]{err}\n"
        try:
            self._file_commands(files, spec.get("id"))
        except WorkflowError as err:
            return 1, f"{output}##[error]{err}\n"
        return code, output

    def _process_env(
        self, step_env: dict[str, str], files: dict[str, Path], action: str
    ) -> dict[str, str]:
        """The step's environment: the runner's, then env: and $GITHUB_ENV, then GitHub's own
        variables, which a workflow cannot override."""
        env = {**self.runner.env, **self.ctx.env, **step_env}
        env["PATH"] = os.pathsep.join([*self.paths, env.get("PATH", os.defpath)])
        github = self.ctx.github
        env.update(
            {
                f"GITHUB_{key.upper()}": str(value)
                for key, value in github.items()
                if key not in ("token", "event")
            }
        )
        env.update(
            CI="true",
            GITHUB_ACTIONS="true",
            GITHUB_ACTION=action,
            RUNNER_OS="Linux",
            RUNNER_TEMP=str(self.temp),
        )
        env.update({name: str(path) for name, path in files.items()})
        return env

    def _file_commands(self, files: dict[str, Path], step_id: str | None) -> None:
        """What the step wrote for the steps after it, read as GitHub reads it."""
        self.exported.update(_read_file_command(files["GITHUB_ENV"]))
        added = [line.strip() for line in files["GITHUB_PATH"].read_text().splitlines()]
        self.paths = [*reversed([p for p in added if p]), *self.paths]
        outputs = _read_file_command(files["GITHUB_OUTPUT"])
        if step_id:
            self.ctx.steps.setdefault(step_id, {"outputs": {}})["outputs"].update(outputs)
        self.summary.append(files["GITHUB_STEP_SUMMARY"].read_text())


# ---------------------------------------------------------------------------- the runner


def _merge_commit(bare: git.Repo, base: str, head: str) -> str:
    """GitHub's test merge of a pull request: the head merged into the base, made in the
    repository itself (git merge-tree); a conflict means no merge commit, hence no run."""
    try:
        tree = bare.git.merge_tree("--write-tree", base, head).splitlines()[0]
    except git.GitCommandError as err:
        raise WorkflowError(f"the pull request does not merge: {err.stdout}") from None
    as_actor = identity(ACTOR)
    message = f"Merge {head} into {base}"
    return str(bare.git.commit_tree(tree, "-p", base, "-p", head, "-m", message, env=as_actor))


class ActionsRunner:
    """Plays one workflow file against a bare origin repository: one run per event, its jobs
    in `needs:` order, each on a fresh runner (its own clone) under `work`."""

    def __init__(
        self,
        workflow: Path,
        origin: Path,
        work: Path,
        *,
        repository: str,
        api_url: str,
        token: str,
        secrets: Mapping[str, str] | None = None,
        variables: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.workflow = load_workflow(workflow)
        self.name = str(self.workflow.get("name") or workflow.name)
        self.origin, self.work, self.repository = origin, work, repository
        self.api_url, self.token = api_url, token
        self.secrets = {**(secrets or {}), "GITHUB_TOKEN": token}
        self.variables = dict(variables or {})  # the repository's configuration variables
        self.env = dict(os.environ if env is None else env)
        self.runs = 0

    def github_context(self, event: Event, workspace: Path, job_id: str) -> dict[str, Any]:
        """The github context; each field but token and event is also a GITHUB_* variable."""
        return {
            "token": self.token,
            "event": event.payload,
            "event_name": event.name,
            "event_path": str(self.work / f"run-{self.runs}" / "event.json"),
            "sha": event.sha,
            "ref": event.ref,
            "ref_type": "branch",
            "ref_name": event.ref.removeprefix("refs/heads/").removeprefix("refs/pull/"),
            "base_ref": event.base_ref,
            "head_ref": event.head_ref,
            "repository": self.repository,
            "repository_owner": self.repository.split("/")[0],
            "workspace": str(workspace),
            "run_id": str(1000 + self.runs),
            "run_number": str(self.runs),
            "run_attempt": "1",
            "job": job_id,
            "workflow": self.name,
            "actor": "site-admin",
            "api_url": self.api_url,
            "server_url": "https://github.invalid",
        }

    def pull_request(
        self, number: int, head: str, base: str = "main", action: str = "synchronize"
    ) -> Run:
        """A run for a pull request from branch `head` into `base`, as pushed to the origin."""
        bare = git.Repo(self.origin)
        head_sha, base_sha = (bare.commit(f"refs/heads/{b}").hexsha for b in (head, base))
        merge_sha = _merge_commit(bare, base_sha, head_sha)
        bare.git.update_ref(f"refs/pull/{number}/head", head_sha)
        bare.git.update_ref(f"refs/pull/{number}/merge", merge_sha)
        pull = {
            "number": number,
            "merged": False,
            "head": {"ref": head, "sha": head_sha},
            "base": {"ref": base, "sha": base_sha},
        }
        payload = {
            "action": action,
            "number": number,
            "pull_request": pull,
            "repository": {"full_name": self.repository},
        }
        ref = f"refs/pull/{number}/merge"
        return self.run(Event("pull_request", ref, merge_sha, payload, base, head))

    def push(self, branch: str = "main") -> Run:
        """A run for what the origin's `branch` holds now, as if it had just been pushed."""
        commit = git.Repo(self.origin).commit(f"refs/heads/{branch}")
        before = commit.parents[0].hexsha if commit.parents else "0" * 40
        payload = {
            "ref": f"refs/heads/{branch}",
            "before": before,
            "after": commit.hexsha,
            "repository": {"full_name": self.repository},
        }
        return self.run(Event("push", f"refs/heads/{branch}", commit.hexsha, payload))

    def scheduled(self, name: str = "schedule", branch: str = "main") -> Run:
        """A `schedule` (or `workflow_dispatch`) run on the default branch."""
        sha = git.Repo(self.origin).commit(f"refs/heads/{branch}").hexsha
        payload = {"repository": {"full_name": self.repository}}
        return self.run(Event(name, f"refs/heads/{branch}", sha, payload))

    def run(self, event: Event) -> Run:
        """The jobs `event` triggers, in order; a job whose `if:` is false is skipped."""
        self.runs += 1
        folder = self.work / f"run-{self.runs}"
        (folder / "artifacts").mkdir(parents=True)
        (folder / "event.json").write_text(json.dumps(event.payload, indent=2))
        jobs: dict[str, JobResult] = {}
        if not self._triggered(event):
            return Run(event, folder, jobs)
        for job_id in self._order():
            results = [jobs[need].result for need in _needs(self.workflow["jobs"][job_id])]
            status = next(
                (r for r in ("failure", "cancelled", "skipped") if r in results), "success"
            )
            job = _Job(self, folder, event, job_id)
            job.ctx.status = status
            if condition_holds(job.spec.get("if", "success()"), job.ctx):
                job.ctx.status = "success"
                jobs[job_id] = job.run()
            else:
                jobs[job_id] = JobResult(job_id, "skipped", [], job.workspace, "", None)
        return Run(event, folder, jobs)

    def _triggered(self, event: Event) -> bool:
        triggers = _triggers(self.workflow["on"])
        if event.name not in triggers:
            return False
        filters = triggers[event.name]
        if not isinstance(filters, dict):
            return True
        branches = filters.get("branches")
        if branches is not None and not any(fnmatch.fnmatchcase(event.branch, b) for b in branches):
            return False
        types = filters.get("types") or (_PR_TYPES if event.name == "pull_request" else None)
        return types is None or event.payload.get("action") in types

    def _order(self) -> list[str]:
        """Job ids with each after the jobs it needs, otherwise in file order."""
        jobs, done = self.workflow["jobs"], []

        def visit(job_id: str, stack: tuple[str, ...]) -> None:
            if job_id in stack or job_id not in jobs:
                raise WorkflowError(f"needs: {job_id!r} is unknown or in a cycle: {stack}")
            if job_id not in done:
                for need in _needs(jobs[job_id]):
                    visit(need, (*stack, job_id))
                done.append(job_id)

        for job_id in jobs:
            visit(job_id, ())
        return done
