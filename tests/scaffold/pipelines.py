"""The generated pipelines run under a shell, for both forges, in a site repository that
``xce-init`` made: GitHub's workflow by tests/wheel/actions_runner.py (a local runner of
GitHub Actions jobs), GitLab's pipeline by ``GitLabPlayer`` below, which runs each job's
``before_script`` and ``script`` lines in one ``bash`` with ``set -eo pipefail``, as GitLab
Runner's bash shell does (it stops at the first failing line).

The install step of each job runs as written, against a runner venv whose ``pip`` installs
nothing and whose ``bin/`` links the dev venv's console scripts: the pipeline puts the
xce commands on PATH itself, and no wheel is built (tests/wheel plays that part).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import git
from ruamel.yaml import YAML

from tests.git_identity import SITE_ADMIN, identity

BIN = Path(sys.executable).parent
RUNNER_PATH = os.pathsep.join(["/usr/local/bin", "/usr/bin", "/bin"])  # no xce-* on it
ADMIN = SITE_ADMIN
IDENTITY = identity(ADMIN)
# an opcode of a risk that xce-policy review calls an escalation (exit 3)
ROLE_LINE = "      allow: [host.query, supply.query]"
ESCALATING_ROLE_LINE = "      allow: [host.query, supply.query, host.drain]"


def runner_venv(where: Path) -> Path:
    """A venv as a runner keeps it: ``bin/pip`` (installs nothing, notes its arguments in
    ``pip.log``) and the xce commands of the dev venv."""
    bin_dir = where / "bin"
    bin_dir.mkdir(parents=True)
    pip = bin_dir / "pip"
    pip.write_text(f'#!/bin/sh\necho "$@" >> {shlex.quote(str(where / "pip.log"))}\n')
    pip.chmod(0o755)
    for script in BIN.glob("xce-*"):
        (bin_dir / script.name).symlink_to(script)
    return where


def runner_env(root: Path, venv: Path) -> dict[str, str]:
    """A runner's environment: system tools, no xce command on PATH until the install step
    adds the venv's, a home of its own, the shared working folder of the site's runners."""
    home = root / "runner-home"
    home.mkdir(parents=True, exist_ok=True)
    return {
        "PATH": RUNNER_PATH,
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "XCE_VENV": str(venv),
        "XCE_WORKDIR": str(root / "cluster"),
        **IDENTITY,
    }


def commit_edit(repo: git.Repo, branch: str, file: str, old: str, new: str) -> str:
    """Commit one edit of ``file`` on ``branch`` (made from main when new); its sha."""
    heads = [head.name for head in repo.heads]
    repo.git.checkout(branch if branch in heads else ["-b", branch, "main"])
    path = Path(repo.working_dir, file)
    text = path.read_text()
    assert old in text, f"{old!r} is not in {file}"
    path.write_text(text.replace(old, new, 1))
    repo.index.add([file])
    return repo.index.commit(f"{file}: {new.strip()}", author=ADMIN, committer=ADMIN).hexsha


# ---------------------------------------------------------------------------- GitLab

_OPERAND = r'(\$\w+|"[^"]*")'
_COMPARISON = re.compile(rf"^\s*{_OPERAND}\s*(==|!=)\s*{_OPERAND}\s*$")


def _operand(text: str, env: Mapping[str, str]) -> str:
    return env.get(text[1:], "") if text.startswith("$") else text[1:-1]


def rule_holds(expression: str, env: Mapping[str, str]) -> bool:
    """A ``rules: if:`` of ``A == B`` / ``A != B`` comparisons joined by ``&&``; anything
    else is refused, so the pipeline cannot come to rely on what this player never checks."""
    holds = True
    for part in expression.split("&&"):
        match = _COMPARISON.match(part)
        assert match, f"rules: if: {expression!r} is not supported by this player"
        left, op, right = match.groups()
        same = _operand(left, env) == _operand(right, env)
        holds = holds and (same if op == "==" else not same)
    return holds


def _expanded(value: Any, env: Mapping[str, str]) -> str:
    """A ``variables:`` value with ``$NAME`` / ``${NAME}`` expanded, as GitLab does."""
    return re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m.group(1), ""), str(value))


@dataclass(frozen=True)
class GitLabJob:
    name: str
    exit_code: int
    output: str
    allowed: bool  # allow_failure holds this exit code: the job shows a warning

    @property
    def passed(self) -> bool:
        return self.exit_code == 0 or self.allowed


class GitLabPlayer:
    """Plays the jobs of one ``.gitlab-ci.yml`` for a pipeline source, one after another."""

    def __init__(self, path: Path, env: Mapping[str, str]) -> None:
        self.pipeline: dict[str, Any] = YAML(typ="safe", pure=True).load(path.read_text())
        self.env = dict(env)

    def jobs(self) -> dict[str, dict[str, Any]]:
        return {name: spec for name, spec in self.pipeline.items()
                if isinstance(spec, dict) and "script" in spec}

    def created(self, ci: Mapping[str, str]) -> dict[str, str]:
        """The jobs a pipeline of these CI variables holds, each with its ``when``
        (``on_success`` or ``manual``); none when ``workflow: rules`` make no pipeline."""
        scope = {**self.env, **ci}
        if not any(rule_holds(rule["if"], scope) for rule in self.pipeline["workflow"]["rules"]):
            return {}
        found = {}
        for name, spec in self.jobs().items():
            rule = next((r for r in spec.get("rules", []) if rule_holds(r["if"], scope)), None)
            if rule is not None and rule.get("when", "on_success") != "never":
                found[name] = rule.get("when", "on_success")
        return found

    def run(self, name: str, workspace: Path, ci: Mapping[str, str]) -> GitLabJob:
        """One job in ``workspace`` (its checkout): variables, then before_script and script
        in one bash that stops at the first failing line."""
        spec = self.jobs()[name]
        env = {**self.env, **ci, "CI": "true", "GITLAB_CI": "true",
               "CI_PROJECT_DIR": str(workspace), "CI_JOB_NAME": name}
        for key, value in {**self.pipeline.get("variables", {}),
                           **spec.get("variables", {})}.items():
            env[key] = _expanded(value, env)
        lines = [*self.pipeline.get("default", {}).get("before_script", []), *spec["script"]]
        script = workspace.parent / f"{name}.sh"
        script.write_text("set -eo pipefail\n" + "\n".join(lines) + "\n")
        done = subprocess.run(["bash", "--noprofile", "--norc", str(script)], cwd=workspace,
                              env=env, capture_output=True, text=True, timeout=300, check=False)
        allowed = done.returncode in (spec.get("allow_failure") or {}).get("exit_codes", [])
        return GitLabJob(name, done.returncode, done.stdout + done.stderr, allowed)
