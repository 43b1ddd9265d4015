"""Issue 10 §5, the CLI's basics, for every console script pyproject declares (so a new
command cannot be missed): ``--version``, documented options without reStructuredText,
the requested ``--format`` document on stdout also when a run fails, and repeated lines
grouped for people (never in json)."""

from __future__ import annotations

import argparse
import importlib
import json
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from compiler.cli.problem_render import render, render_text
from compiler.cli.runner import UsageParser
from compiler.core.hostlist import fold_subjects
from compiler.core.problems import Problem, Severity
from tests.apply.small_site import write_site

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
SCRIPTS: dict[str, str] = PROJECT["scripts"]
Main = Callable[[list[str]], int]


def _main(name: str) -> Main:
    module, function = SCRIPTS[name].split(":")
    main: Main = getattr(importlib.import_module(module), function)
    return main


def _exits(main: Main, argv: list[str]) -> int:
    """The exit status of a run that ends by SystemExit (--help, --version)."""
    with pytest.raises(SystemExit) as done:
        main(argv)
    return int(done.value.code or 0)


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_every_command_answers_version(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _exits(_main(name), ["--version"]) == 0
    assert capsys.readouterr().out == f"{name} (xce-gitops {PROJECT['version']})\n"


@pytest.mark.parametrize("argv", [["xce-lock", "list"], ["xce-map", "show"],
                                  ["xce-policy", "review"]])
def test_sub_commands_answer_version_too(argv: list[str],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert _exits(_main(argv[0]), [*argv[1:], "--version"]) == 0
    assert capsys.readouterr().out == f"{argv[0]} (xce-gitops {PROJECT['version']})\n"


def _parsers_of(name: str, monkeypatch: pytest.MonkeyPatch) -> list[argparse.ArgumentParser]:
    """Every parser (sub-parsers and parents too) the command builds to answer --help."""
    made: list[argparse.ArgumentParser] = []
    real = argparse.ArgumentParser.__init__

    def recording(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        real(self, *args, **kwargs)  # type: ignore[arg-type]
        made.append(self)

    monkeypatch.setattr(argparse.ArgumentParser, "__init__", recording)
    assert _exits(_main(name), ["--help"]) == 0
    return made


def _texts(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str | None]]:
    """(what, its help text) for the command, each option and sub-command (a sub-command's
    text is the help its command lists it with; a parents=[…] fragment has none)."""
    if parser.add_help and " " not in parser.prog:
        yield f"{parser.prog} description", parser.description
    if parser.epilog:
        yield f"{parser.prog} epilog", parser.epilog
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                yield f"{parser.prog} {choice.dest}", choice.help
        else:
            yield f"{parser.prog} {'/'.join(action.option_strings) or action.dest}", action.help


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_every_option_is_documented_in_plain_text(name: str, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    parsers = _parsers_of(name, monkeypatch)
    assert parsers and all(isinstance(p, UsageParser) for p in parsers)
    for what, text in (t for p in parsers for t in _texts(p)):
        assert text and text != argparse.SUPPRESS, f"{what} has no help text"
        assert "``" not in text, f"{what}: {text!r}"
    assert "``" not in capsys.readouterr().out


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XCE_CRASH_DIR", str(tmp_path / "crashes"))
    monkeypatch.delenv("XCE_STATE_URL", raising=False)
    write_site(tmp_path / "site")
    return tmp_path


# (command, arguments, formats, the code of the failure): usage mistakes, a missing input
# (a UserError deep down, or problems the command returns), and an unwritable output
FAILURES = [
    ("xce-compile", ["site", "--bogus"], ("json", "github", "markdown"), "XCE007"),
    ("xce-compile", ["nowhere"], ("json", "github", "markdown"), "XCE006"),
    ("xce-compile", ["site", "--out", "site/hosts.yaml"], ("json", "github", "markdown"),
     "XCE008"),
    ("xce-policy", ["compile", "--site", "nowhere"], ("json", "github", "markdown"), "XCE662"),
    ("xce-policy", ["review", "--base", "main"], ("json", "markdown"), "XCE660"),
    ("xce-policy", ["review"], ("json", "markdown"), "XCE670"),
    ("xce-plan", ["nowhere"], ("json", "markdown"), "XCE006"),
    ("xce-plan", ["site", "--bogus"], ("json", "markdown"), "XCE007"),
    ("xce-plan", ["site", "--out", "site/hosts.yaml/plan.json"], ("json", "markdown"),
     "XCE765"),
    ("xce-apply", ["missing.json"], ("json",), "XCE760"),
    ("xce-apply", ["site"], ("json",), "XCE820"),
    ("xce-lock", ["--state", "mysql://db/x", "list"], ("json",), "XCE800"),
    ("xce-map", ["--db", "missing.sqlite", "show"], ("json",), "XCE730"),
]
CASES = [(name, args, fmt, code) for name, args, formats, code in FAILURES for fmt in formats]


def _document_says(out: str, fmt: str, code: str) -> None:
    """``out`` is one document of format ``fmt`` reporting the error ``code``."""
    if fmt == "json":
        doc = json.loads(out)
        assert doc["valid"] is False and code in [p["code"] for p in doc["problems"]]
    elif fmt == "markdown":
        assert out.startswith("| | where | code |") and "| ❌ |" in out and code in out
    else:
        assert out.startswith("::error ") and f"title={code}" in out


@pytest.mark.parametrize(("name", "args", "fmt", "code"), CASES,
                         ids=[f"{n}-{c}-{f}" for n, _, f, c in CASES])
def test_a_failed_run_prints_the_document_asked_for(
        name: str, args: list[str], fmt: str, code: str, here: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert _main(name)([*args, "--format", fmt]) == 1
    out, err = capsys.readouterr()
    _document_says(out, fmt, code)
    assert f"error[{code}]" in err  # the log reads as always


def test_text_runs_keep_stdout_for_results(here: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert _main("xce-plan")(["nowhere"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "error[XCE006]" in err


# a function each command calls once its arguments are parsed, made to crash
CRASH_AT = {
    "xce-compile": ("compiler.cmds.compile", "compile_site", ["site"]),
    "xce-policy": ("compiler.cmds.policy", "compile_policies", ["compile", "--site", "site"]),
    "xce-plan": ("reconciler.plan_use_case", "load_desired", ["site"]),
    "xce-apply": ("reconciler.apply_use_case", "load_plan", ["plan.json"]),
    "xce-lock": ("reconciler.cmds.lock", "open_store", ["--site", "site", "list"]),
    "xce-map": ("reconciler.cmds.map", "_opened", ["--site", "site", "show"]),
}


@pytest.mark.parametrize("name", sorted(CRASH_AT))
def test_a_crash_is_a_document_naming_the_crash_file(
        name: str, here: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    module, function, args = CRASH_AT[name]

    def crash(*_: object, **__: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(importlib.import_module(module), function, crash)
    (here / "plan.json").write_text("{}")
    assert _main(name)([*args, "--format", "json"]) == 1
    out, err = capsys.readouterr()
    (problem,) = json.loads(out)["problems"]
    assert problem["code"] == "XCE900" and "internal error (RuntimeError)" in problem["message"]
    (crash_file,) = (here / "crashes").iterdir()
    assert str(crash_file) in problem["hint"] and str(crash_file) in err
    assert "RuntimeError: a bug" in crash_file.read_text() and "Traceback" not in err


def test_compile_markdown_of_a_valid_site_is_a_short_document(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _main("xce-compile")(["site", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    manifest = json.loads((here / "build" / "manifest.json").read_text())
    assert out.startswith("### ✅ Compiled site small\n")
    assert "| entries | 19 |" in out and "| providers | 2 |" in out
    assert f"| desired digest | `{manifest['desired_digest']}` |" in out
    for name in (*manifest["outputs"], "manifest.json"):
        assert f"`build/{name}`" in out


def _owner_warnings(n: int) -> list[Problem]:
    return [Problem("XCE599", f"user 'u{i:02d}' does not resolve: /fs/u{i:02d} is left owned "
                    "by root", "create the user, then apply again", None, Severity.WARNING,
                    f"volume-dir/shared/u{i:02d}") for i in range(1, n + 1)]


def test_problems_alike_but_for_their_subject_are_one_line_of_text() -> None:
    problems = [*_owner_warnings(20), Problem("XCE702", "provider 'x' is down", "",
                                              subject="x")]
    text = render_text(problems)
    assert text.splitlines() == [
        "volume-dir/shared/u[01-20]: warning[XCE599] (20 alike): user '<name>' does not "
        "resolve: /fs/<name> is left owned by root",
        "  hint: create the user, then apply again",
        "x: error[XCE702]: provider 'x' is down",
        "1 error(s), 20 warning(s)",
    ]
    assert len(json.loads(render(problems, "json"))["problems"]) == 21  # json keeps each
    assert render(problems, "github").count("::warning") == 20


def test_problems_at_a_place_in_a_file_are_never_grouped() -> None:
    from compiler.core.problems import Where

    at = [Problem("XCE204", "in two groups", "", Where("hosts.yaml", (), line, 3),
                  subject=f"cn{line}") for line in (1, 2)]
    assert render_text(at).count("error[XCE204]: in two groups") == 2


def test_subjects_are_folded_compactly() -> None:
    hosts = [f"host/cn{i:04d}" for i in range(1, 65)]
    assert fold_subjects(hosts) == "host/cn[0001-0064]"
    assert fold_subjects(["volume-dir/shared/bob", "volume-dir/shared/alice", "flexlm"]) == \
        "volume-dir/shared/{alice,bob}, flexlm"
    many = [f"volume-dir/shared/{name}" for name in ("ann", "bea", "cid", "dan", "eve")]
    assert fold_subjects(many, limit=3) == "volume-dir/shared/{ann,bea,cid} … (5 in all)"
