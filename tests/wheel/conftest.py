"""The product installed the way a site installs it: a wheel of the working tree in a fresh venv.

The wheel is built from a copy of the working tree's files (tracked and new, not ignored), so a
stale `build/` folder or an editable install can never stand in for the package, and setuptools
leaves its `build/` and egg-info in the copy, not in this repository (whose `build/` is the demo's
compile output). The build is isolated (pip fetches the build-system requirements, as for
a site), because the dev venv's setuptools may be too old to build wheels.
One build per pytest session: under xdist the workers share it through a lock.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import git
import pytest

ROOT = Path(__file__).resolve().parents[2]
# what the packaging reads: the build configuration, the packages and the data they ship
SOURCES = (
    "pyproject.toml",
    "README.md",
    "MANIFEST.in",
    "compiler",
    "reconciler",
    "policies",
    "site-config",
    "docs",
)


def _source_files() -> list[str]:
    """The working tree's files under SOURCES: tracked or new, minus what .gitignore ignores."""
    listed = git.Repo(ROOT).git.ls_files(
        "--cached", "--others", "--exclude-standard", "--", *SOURCES
    )
    files = {name for name in listed.splitlines() if name}
    return sorted(name for name in files if os.path.lexists(ROOT / name))


def _tree_digest(files: list[str]) -> str:
    """A key that changes with any file's name, content or link target."""
    digest = hashlib.sha256()
    for name in files:
        path = ROOT / name
        body = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
        digest.update(name.encode() + b"\0" + hashlib.sha256(body).digest())
    return digest.hexdigest()[:16]


def _copy_tree(files: list[str], dest: Path) -> None:
    """Copy the files, keeping symbolic links as links (the packaging must cope with them)."""
    for name in files:
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target, follow_symlinks=False)


def _pip(*args: str | Path) -> None:
    """Run the dev venv's pip; a failure shows pip's own output."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--quiet", *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        pytest.fail(f"pip {' '.join(map(str, args))} failed:\n{done.stdout}{done.stderr}")


def _build_and_install(files: list[str], where: Path) -> None:
    """Build the wheel from a copy of the tree and install it (not editable) into a new venv."""
    source, dist, venv = where / "src", where / "dist", where / "venv"
    _copy_tree(files, source)
    _pip("wheel", "--no-deps", "-w", dist, source)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    (wheel,) = dist.glob("xce_gitops-*.whl")
    # no byte-compiling: each module compiles on its first import, which most never see
    _pip("--python", venv / "bin" / "python", "install", "--no-compile", wheel)


def _shared_dir(factory: pytest.TempPathFactory) -> Path:
    """This session's temp folder, shared by all xdist workers of the session."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@dataclass(frozen=True)
class Installed:
    """The fresh venv holding the installed wheel, and a way to run its commands."""

    venv: Path
    wheel: Path

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")

    def bin(self, name: str) -> str:
        """The path of a console script of the fresh venv (asserting that it was installed)."""
        path = self.venv / "bin" / name
        assert path.is_file(), f"{name} is not installed in {self.venv}"
        return str(path)

    def environ(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """This process's environment as a site admin's shell would have it after activating the
        venv: its bin first on PATH, the dev venv's bin and PYTHONPATH gone, no pytest state."""
        dev_bin = str(Path(sys.executable).parent)
        env = {
            key: value
            for key, value in os.environ.items()
            if key != "PYTHONPATH" and not key.startswith("PYTEST_")
        }
        path = [entry for entry in env.get("PATH", "").split(os.pathsep) if entry != dev_bin]
        env["PATH"] = os.pathsep.join([str(self.venv / "bin"), *path])
        env["VIRTUAL_ENV"] = str(self.venv)
        env.update(extra or {})
        return env

    def run(
        self,
        args: list[str],
        cwd: Path,
        env: dict[str, str] | None = None,
        check: bool = False,
    ) -> subprocess.CompletedProcess[str]:
        """Run a command in `cwd` (outside this repository) the way a site admin would; `env`
        adds to or overrides the environment."""
        assert not cwd.resolve().is_relative_to(ROOT), f"{cwd} is inside this repository"
        full_env = self.environ(env)
        program = shutil.which(args[0], path=full_env["PATH"]) or args[0]
        return subprocess.run(
            [program, *args[1:]],
            cwd=cwd,
            env=full_env,
            check=check,
            capture_output=True,
            text=True,
            timeout=300,
        )


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The working tree built as a wheel and installed into a fresh venv, once per session."""
    files = _source_files()
    where = _shared_dir(tmp_path_factory) / f"wheel-{_tree_digest(files)}"
    where.mkdir(parents=True, exist_ok=True)
    with (where.parent / f"{where.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (where / "ready").exists():
            shutil.rmtree(where)
            where.mkdir()
            _build_and_install(files, where)
            (where / "ready").touch()
        fcntl.flock(lock, fcntl.LOCK_UN)
    (wheel,) = (where / "dist").glob("xce_gitops-*.whl")
    return Installed(venv=where / "venv", wheel=wheel)
