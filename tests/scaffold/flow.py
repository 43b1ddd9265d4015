"""A site admin's day in a repository made by xce-init, step by step, with real processes and
real git. One definition for both installs: tests/scaffold runs it against the editable
checkout, tests/wheel/test_scaffold.py against the wheel installed in a fresh venv.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import git

# run(argv, cwd, env) -> the finished process: a console script (or pytest, git) found on the
# PATH of the install under test
Run = Callable[[list[str], Path, dict[str, str]], subprocess.CompletedProcess[str]]

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = "tests/__snapshots__/test_policies.ambr"
SMALL_SITE_FILES = ("site.yaml", "hosts.yaml", "storage.yaml", "providers.yaml",
                    "proxies.yaml", "policy.yaml")
PIPELINE_FILES = (".github/workflows/xce-gitops.yml", ".pre-commit-config.yaml")  # --ci github
REPO_FILES = (".gitignore", "README.md", "pytest.ini", "tests/test_policies.py", SNAPSHOT,
              "ci/README.md", *PIPELINE_FILES)
ROLE_LINE = "      allow: [host.query, supply.query]"


def no_git_user(home: Path) -> dict[str, str]:
    """An environment where git has no user configured (a fresh CI runner or container)."""
    home.mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_CONFIG_NOSYSTEM": "1",
    }


def ok(done: subprocess.CompletedProcess[str], code: int = 0) -> str:
    """The output of a run that exited ``code``; otherwise a failure that shows it all."""
    assert done.returncode == code, f"exit {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def changed_lines(repo: Path, path: str) -> list[str]:
    """The lines ``git diff`` adds and removes in ``path``, in order, without the headers."""
    diff = git.Repo(repo).git.diff("-U0", "--", path)
    return [line for line in diff.splitlines()
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def is_clean(repo: Path) -> bool:
    """Nothing to commit: every output of compile, plan, apply and pytest is ignored."""
    return not git.Repo(repo).is_dirty(untracked_files=True)


def scaffold(run: Run, repo: Path, env: dict[str, str], *options: str) -> str:
    """``xce-init`` into ``repo`` (new or empty); its summary line."""
    return ok(run(["xce-init", str(repo), *options], repo.parent, env))


def check_new_repository(repo: Path, author: str) -> None:
    """The small site, the repository's own files, one commit that holds them all, on main."""
    for name in (*SMALL_SITE_FILES, *REPO_FILES):
        assert (repo / name).is_file(), name
    handle = git.Repo(repo)
    (commit,) = handle.iter_commits()
    assert f"{commit.author.name} <{commit.author.email}>" == author
    assert handle.active_branch.name == "main"
    assert set(handle.git.ls_files().splitlines()) == {*SMALL_SITE_FILES, *REPO_FILES}
    assert is_clean(repo)
    ignored = (repo / ".gitignore").read_text().splitlines()
    assert {"/build/", ".xce/", "plan.json", "*.plan.json", "__pycache__/"} <= set(ignored)


def check_compile_plan_apply(run: Run, repo: Path) -> None:
    """In the repository, with nothing else set up: compile, plan (creates), apply, plan
    again (nothing to do); none of it leaves anything for git to commit."""
    env: dict[str, str] = {}
    out = ok(run(["xce-compile", "."], repo, env))
    head = git.Repo(repo).head.commit.hexsha
    assert f"at {head[:12]}:" in out and "(dirty)" not in out  # the revision is recorded
    assert (repo / "build" / "allowlists.json").is_file()
    assert "38 to add" in ok(run(["xce-plan", ".", "--out", "plan.json"], repo, env), 2)
    assert "38 done" in ok(run(["xce-apply", "--auto-approve", "."], repo, env))
    ok(run(["xce-plan", "."], repo, env))
    assert (repo / ".xce").is_dir()
    assert is_clean(repo)


def _failed_lines(out: str) -> list[str]:
    """The received (+) and snapshot (-) lines of syrupy's diffs in a pytest output."""
    return re.findall(r"^E\s+([+-] .*)$", out, re.MULTILINE)


def check_role_change_is_reviewed(run: Run, repo: Path) -> None:
    """pytest passes; a role gains an opcode in the site's policy: → pytest fails showing
    the role and the opcode; --snapshot-update → passes; git diff of the snapshot is exactly
    that change."""
    env: dict[str, str] = {}
    assert "4 passed" in ok(run(["pytest"], repo, env))
    policy = repo / "policy.yaml"
    text = policy.read_text()
    assert ROLE_LINE in text
    policy.write_text(text.replace(ROLE_LINE, ROLE_LINE[:-1] + ", job.query]"))
    out = ok(run(["pytest"], repo, env), 1)
    assert "2 failed, 2 passed" in out
    shown = _failed_lines(out)
    assert "+ role site-monitor holds job.query (105, job, read)" in shown
    assert "+ role site-monitor gains job.query (105, read)" in shown
    assert "Traceback" not in out
    assert "2 snapshots updated" in ok(run(["pytest", "--snapshot-update"], repo, env))
    assert changed_lines(repo, SNAPSHOT) == [
        "-  the site's policy: against the bundled policies: 3 change(s), 1 escalation(s)",
        "+  the site's policy: against the bundled policies: 4 change(s), 1 escalation(s)",
        "+  role site-monitor gains job.query (105, read)",
        "+  role site-monitor holds job.query (105, job, read)",
    ]


def check_site_policies_folder_is_reviewed(run: Run, repo: Path) -> None:
    """A ``policies/`` folder in the site replaces the bundled policies: its roles are
    compiled (and its YAML is not read as site files), and a change to them shows too."""
    env: dict[str, str] = {}
    git.Repo(repo).git.reset("--hard")  # back to the repository as xce-init made it
    shutil.copytree(ROOT / "policies", repo / "policies")
    roles = repo / "policies" / "roles.yaml"
    worker = "      - host.join\n"
    assert worker in roles.read_text()
    roles.write_text(roles.read_text().replace(worker, worker + "      - host.query\n", 1))
    ok(run(["xce-compile", "."], repo, env))
    out = ok(run(["pytest"], repo, env), 1)
    assert "+ role worker holds host.query (204, host, read)" in _failed_lines(out)
    ok(run(["pytest", "--snapshot-update"], repo, env))
    assert changed_lines(repo, SNAPSHOT) == [
        "-  the site's policy: against the bundled policies: 3 change(s), 1 escalation(s)",
        "+  the site's policy: against the site folder's policies/: 3 change(s), 1 "
        "escalation(s)",
        "+  role worker holds host.query (204, host, read)",
    ]


def check_pipeline_files(run: Run, repo: Path) -> None:
    """The pipeline files of the new repository are what ``xce-init --print-ci`` prints, with
    the installed version pinned; ``xce-compile --check`` (the hook's command) writes
    nothing."""
    env: dict[str, str] = {}
    version = ok(run(["xce-init", "--version"], repo, env)).split()[-1].rstrip(")")
    for kind, path in (("github", PIPELINE_FILES[0]), ("pre-commit", PIPELINE_FILES[1])):
        printed = run(["xce-init", "--print-ci", kind], repo.parent, env)
        assert ok(printed) == printed.stdout == (repo / path).read_text(), kind
    assert f'XCE_GITOPS_VERSION: "{version}"' in (repo / PIPELINE_FILES[0]).read_text()
    assert f'"xce-gitops=={version}"' in (repo / PIPELINE_FILES[1]).read_text()
    out = ok(run(["xce-compile", ".", "--check", "--out", "never"], repo, env))
    assert "; nothing written" in out and not (repo / "never").exists()
    assert is_clean(repo)
