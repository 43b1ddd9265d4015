"""Issue 20 §5: a command's output streams and its paths never end in a traceback.

Each case is a real process, as a user or a CI job starts it: stdout full (``/dev/full``),
closed (``>&-``), unable to encode a character (``PYTHONIOENCODING=ascii``, the C locale
outside Python's UTF-8 mode), file names that are not UTF-8 or hold control characters,
and a site path longer than the system takes. Each ends in one clear problem on stderr
and exit 1 (or, for a name, in output that shows it escaped), never "Traceback", never
Python's "Exception ignored" at exit.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.apply.small_site import write_site

RAW = ("Traceback", "Exception ignored", "internal error")
# a group name with a non-ASCII letter: an error whose message quotes it
NON_ASCII = "version: 1\nhost_groups:\n  - {name: cpü, hosts: 'cn[1-2]'}\n"
BAD_RANGE = "version: 1\nhost_groups:\n  - {{name: {name}, hosts: 'x[2-1]'}}\n"


def _script(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def run(argv: list[str], cwd: Path, env: Mapping[str, str] | None = None,
        **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
    """A console script as installed, its output as bytes (what reaches a terminal)."""
    streams = kwargs or {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    return subprocess.run([_script(argv[0]), *argv[1:]], cwd=cwd, timeout=120, check=False,
                          env={**os.environ, **(env or {})}, **streams)


def assert_clean(stderr: bytes) -> str:
    text = stderr.decode("utf-8", "replace")
    assert not any(raw in text for raw in RAW), text
    return text


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return write_site(tmp_path / "site")


# --- stdout full, closed, or without the characters ----------------------------------------

@pytest.mark.parametrize("argv", [
    ["xce-compile", "site", "--check"],
    ["xce-compile", "site", "--check", "--format", "json"],
    ["xce-compile", "bad", "--check", "--format", "json"],  # the error document itself
    ["xce-plan", "--help"],
    ["xce-policy", "--version"],
])
def test_a_full_stdout_is_one_line(argv: list[str], site: Path, tmp_path: Path) -> None:
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "site.yaml").write_text(NON_ASCII, encoding="utf-8")
    with open("/dev/full", "wb") as full:
        done = run(argv, tmp_path, stdout=full, stderr=subprocess.PIPE)
    err = assert_clean(done.stderr)
    assert done.returncode == 1
    assert "error[XCE047]: cannot write to standard output: No space left on device" in err


def _close_stdout() -> None:
    os.close(1)


def test_a_closed_stdout_runs_nothing(site: Path, tmp_path: Path) -> None:
    """``xce-compile site >&-``: refused before anything is written (the --out folder)."""
    done = subprocess.run([_script("xce-compile"), "site", "--out", "build"], cwd=tmp_path,
                          stderr=subprocess.PIPE, preexec_fn=_close_stdout, timeout=120,
                          check=False)
    err = assert_clean(done.stderr)
    assert done.returncode == 1
    assert "error[XCE047]: standard output is closed" in err
    assert not (tmp_path / "build").exists()


@pytest.mark.parametrize("env", [
    {"PYTHONIOENCODING": "ascii"},
    {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0",
     "PYTHONIOENCODING": ""},
], ids=["ascii", "C-locale"])
def test_characters_the_encoding_lacks_are_escaped(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "site.yaml").write_text(NON_ASCII, encoding="utf-8")
    done = run(["xce-compile", ".", "--check", "--format", "json"], tmp_path, env)
    assert_clean(done.stderr)
    assert done.returncode == 1
    assert done.stdout.isascii() and done.stderr.isascii()
    problems = json.loads(done.stdout)["problems"]  # the escape is JSON's own
    assert any(p["code"] == "XCE106" and "'cpü'" in p["message"] for p in problems), problems
    text = run(["xce-compile", ".", "--check", "--format", "markdown"], tmp_path, env)
    assert text.returncode == 1 and b"\\u274c" in text.stdout  # the table's error mark


# --- names of files -------------------------------------------------------------------------

def _named(tmp_path: Path, name: bytes) -> Path:
    """A site with one file that has a problem, under ``name`` (bytes: any the system takes)."""
    (tmp_path / "site.yaml").write_text("version: 1\nsite: {name: t}\n")
    path = Path(os.fsdecode(os.path.join(os.fsencode(tmp_path), name)))
    path.write_text(BAD_RANGE.format(name="g"))
    return path


def test_a_name_that_is_not_utf8_in_json(tmp_path: Path) -> None:
    _named(tmp_path, b"hosts-\xff.yaml")
    done = run(["xce-compile", ".", "--check", "--format", "json"], tmp_path)
    assert_clean(done.stderr)
    (problem,) = json.loads(done.stdout)["problems"]
    assert (problem["code"], problem["file"]) == ("XCE202", "hosts-\\xff.yaml")
    text = run(["xce-compile", ".", "--check"], tmp_path)
    assert b"hosts-\\xff.yaml:3:" in text.stderr and b"\xff" not in text.stderr


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_control_characters_in_a_name_are_escaped(fmt: str, tmp_path: Path) -> None:
    """A name with a line break and a terminal escape shows as escapes, on one line; the
    github format escapes it its own way (``%0A``), and JSON keeps the name."""
    _named(tmp_path, b"a\nb\x1b[31m.yaml")
    done = run(["xce-compile", ".", "--check", "--format", fmt], tmp_path)
    shown = done.stdout if fmt == "markdown" else done.stderr
    assert b"\x1b" not in shown and b"a\nb" not in shown
    assert b"a\\u000ab\\u001b[31m.yaml:3:" in shown
    data = run(["xce-compile", ".", "--check", "--format", "json"], tmp_path).stdout
    assert json.loads(data)["problems"][0]["file"] == "a\nb\x1b[31m.yaml"


# --- paths the system refuses ---------------------------------------------------------------

LONG = "/".join(["a"] * 3000)


@pytest.mark.parametrize("argv", [
    ["xce-compile", LONG, "--check"],
    ["xce-compile", LONG, "--check", "--format", "json"],
    ["xce-plan", LONG],
    ["xce-drift", LONG],
    ["xce-apply", LONG],
], ids=["compile", "compile-json", "plan", "drift", "apply"])
def test_a_path_of_3000_folders(argv: list[str], tmp_path: Path) -> None:
    done = run(argv, tmp_path)
    err = assert_clean(done.stderr)
    assert done.returncode == 1
    assert re.search(r"error\[XCE048\]: cannot use this path of [0-9],[0-9]{3} characters: "
                     "it is longer than the system takes", err), err
    assert len(err) < 1000  # the path is named shortened, once
    if "json" in argv:
        assert json.loads(done.stdout)["problems"][0]["code"] == "XCE048"


# --- the guard itself ------------------------------------------------------------------------

def test_the_escape_is_valid_json_for_every_character() -> None:
    """Astral characters as UTF-16 pairs, lone surrogates as themselves: JSON reads them."""
    from compiler.cli.std_streams import GuardedStream

    class Ascii:
        encoding = "ascii"

        def __init__(self) -> None:
            self.written: list[str] = []

        def write(self, text: str) -> int:
            text.encode("ascii")  # as an ASCII stream would refuse
            self.written.append(text)
            return len(text)

    stream = Ascii()
    guard: Callable[[str], int] = GuardedStream(stream, "standard output").write  # type: ignore[arg-type]
    guard(json.dumps({"m": "é😀"}, ensure_ascii=False))
    assert json.loads("".join(stream.written)) == {"m": "é😀"}
