"""Every command's input files: a FIFO, /dev/zero, /dev/urandom, a link to each, and a file
over its cap are refused at once with a problem naming the path and what it is.

Each test runs one command over all those inputs in one process (``drive.py``), under a
timeout and a memory limit that only detect a failure: a command that waits on the FIFO
never ends, and one that reads /dev/zero or the sparse file runs out of memory.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from compiler.cmds.compile import main as compile_main
from compiler.core import codes
from compiler.core.file_io import MAP_CAP, SECRET_CAP, SITE_FILE_CAP, TEXT_CAP, Cap
from tests.apply.small_site import write_site

DRIVE = Path(__file__).with_name("drive.py")
HANG = 60  # seconds: only a failure detector, a right program answers in one or two
MEMORY = 3 << 30  # bytes of address space: reading a 4 GiB input stops short of it
WHAT = {"fifo": "a FIFO (named pipe)", "/dev/zero": "a character device",
        "/dev/urandom": "a character device"}
TOO_LARGE = "too large"
KINDS = [*WHAT, *(f"link to {target}" for target in WHAT), TOO_LARGE]


def bad_input(path: Path, kind: str, cap: Cap) -> tuple[str, str, str]:
    """An input of ``kind`` at ``path`` (a device is itself): the path to give, the code it
    gets and words its message has."""
    if kind in WHAT and kind != "fifo":
        return kind, codes.NOT_A_REGULAR_FILE, WHAT[kind]
    if kind == "fifo":
        os.mkfifo(path)
        return str(path), codes.NOT_A_REGULAR_FILE, WHAT[kind]
    if kind == TOO_LARGE:
        with path.open("wb") as fh:
            os.truncate(fh.fileno(), cap.size + 1)  # sparse: costs no disk
        return str(path), codes.INPUT_TOO_LARGE, f"the most {cap.what} may hold"
    target = kind.removeprefix("link to ")
    if target == "fifo":
        target = bad_input(path.with_name(path.name + ".fifo"), target, cap)[0]
    path.symlink_to(target)
    return str(path), codes.NOT_A_REGULAR_FILE, f"a symbolic link to {target}, {WHAT[kind[8:]]}"


def inputs(folder: Path, cap: Cap) -> dict[str, tuple[str, str, str]]:
    """One input of each kind in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    return {kind: bad_input(folder / f"input{i}", kind, cap) for i, kind in enumerate(KINDS)}


def drive(cases: list[dict[str, Any]], cwd: Path,
          prefix: Sequence[str] = ()) -> list[dict[str, Any]]:
    """How each case ended, run by ``drive.py`` in ``cwd`` (``prefix``: e.g. setpriv)."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))

    done = subprocess.run([*prefix, sys.executable, str(DRIVE)], input=json.dumps(cases),
                          cwd=cwd,
                          capture_output=True, text=True, timeout=HANG, preexec_fn=limit,
                          check=False)
    assert done.returncode == 0, done.stderr
    ran: list[dict[str, Any]] = json.loads(done.stdout)
    return ran


def check(found: dict[str, tuple[str, str, str]], ran: list[dict[str, Any]]) -> None:
    """Each case failed with its problem, at its path."""
    wrong = {}
    for (name, (path, code, words)), result in zip(found.items(), ran, strict=True):
        err = result["stderr"]
        if not (result["status"] == 1 and f"{path}: error[{code}]" in err and words in err):
            wrong[name] = result
    assert not wrong, json.dumps(wrong, indent=1)


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small site compiled: a desired map that the live-map cases plan against."""
    folder = tmp_path_factory.mktemp("built")
    site = write_site(folder / "site")
    assert compile_main([str(site), "--out", str(folder / "build")]) == 0
    return folder / "build"


# a command that reads one input: its argv with {input} where the input goes
MAP_INPUTS = {
    "xce-plan --show": ["xce-plan", "--show", "{input}"],
    "xce-apply PLAN": ["xce-apply", "{input}"],
    "xce-plan --desired": ["xce-plan", "--desired", "{input}"],
    "xce-plan --live": ["xce-plan", "--desired", "{build}/supply-map.json", "--live",
                        "{input}"],
    "xce-drift --desired": ["xce-drift", "--desired", "{input}", "--no-record"],
    "xce-drift --live": ["xce-drift", "--desired", "{build}/supply-map.json", "--live",
                         "{input}", "--no-record"],
}


@pytest.mark.parametrize("option", sorted(MAP_INPUTS))
def test_a_map_or_plan_that_is_no_regular_file_or_too_large_is_refused_at_once(
    option: str, build: Path, tmp_path: Path
) -> None:
    found = inputs(tmp_path / "in", MAP_CAP)
    command, *argv = MAP_INPUTS[option]
    cases = [{"command": command, "argv": [a.format(input=path, build=build) for a in argv]}
             for path, _, _ in found.values()]
    check(found, drive(cases, tmp_path))


GITHUB_JOB = {"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "site/config",
              "GITHUB_TOKEN": "not-used", "GITHUB_API_URL": "http://127.0.0.1:9"}


def test_pr_comment_files_and_standard_input_are_bounded_and_never_waited_on(
    tmp_path: Path
) -> None:
    found = inputs(tmp_path / "in", TEXT_CAP)
    (tmp_path / "plan.md").write_text("## Plan\n")
    cases: list[dict[str, Any]] = [{"command": "xce-pr", "argv": ["comment", path]}
                                   for path, _, _ in found.values()]
    check(found, drive(cases, tmp_path))
    stdin, event = drive([
        {"command": "xce-pr", "argv": ["comment", "-"], "stdin": "/dev/zero"},
        {"command": "xce-pr", "argv": ["comment", "plan.md"],
         "env": {**GITHUB_JOB, "GITHUB_EVENT_PATH": found["fifo"][0]}},
    ], tmp_path)
    assert stdin["status"] == 1
    assert f"standard input: error[{codes.INPUT_TOO_LARGE}]" in stdin["stderr"]
    assert event["status"] == 1 and "GITHUB_EVENT_PATH" in event["stderr"]
    assert "a FIFO (named pipe), not a regular file" in event["stderr"]


def test_a_site_file_that_is_no_regular_file_or_too_large_is_an_error(tmp_path: Path) -> None:
    """In the site folder (as bad.yaml), each is an error of the compile naming it."""
    kinds = [kind for kind in KINDS if kind not in ("/dev/zero", "/dev/urandom")]
    found, cases = {}, []
    for i, kind in enumerate(kinds):
        site = write_site(tmp_path / f"site{i}")
        _, code, words = bad_input(site / "bad.yaml", kind, SITE_FILE_CAP)
        found[kind] = (f"site{i}/bad.yaml:1:1", code, words)
        cases.append({"command": "xce-compile", "argv": [f"site{i}", "--check"]})
    check(found, drive(cases, tmp_path))


def test_a_site_drift_template_that_is_no_regular_file_or_too_large_is_an_error(
    build: Path, tmp_path: Path
) -> None:
    """A template of ``--templates DIR`` is read as every input is; before, a FIFO or a
    device under a template's name was skipped for the bundled one, a link to /proc/kmsg
    waited for ever."""
    kinds = [kind for kind in KINDS if kind not in ("/dev/zero", "/dev/urandom")]
    found, cases = {}, []
    for i, kind in enumerate(kinds):
        folder = tmp_path / f"templates{i}"
        folder.mkdir()
        found[kind] = bad_input(folder / "report.txt.j2", kind, SITE_FILE_CAP)
        cases.append({"command": "xce-drift", "argv": [
            "--desired", f"{build}/supply-map.json", "--no-record", "--templates", str(folder)]})
    check(found, drive(cases, tmp_path))


def test_a_secret_file_that_is_no_regular_file_or_too_large_is_refused_at_once(
    tmp_path: Path
) -> None:
    """``file:`` secret references are read the same way (a FIFO is not waited on)."""
    found = inputs(tmp_path / "in", SECRET_CAP)
    script = ("import json, sys\nfrom compiler.core.secrets import SecretError, resolve\n"
              "out = []\nfor path in json.load(sys.stdin):\n"
              "    try:\n        resolve('file:' + path)\n        out.append('read')\n"
              "    except SecretError as err:\n        out.append(str(err))\n"
              "print(json.dumps(out))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).parents[2],
                          input=json.dumps([path for path, _, _ in found.values()]),
                          capture_output=True, text=True, timeout=HANG, check=True,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS,
                                                                (MEMORY, MEMORY)))
    said = dict(zip(found, json.loads(done.stdout), strict=True))
    for kind, (path, _, words) in found.items():
        assert said[kind].startswith(f"secret reference file:{path}: ") and words in said[kind]
