"""Renderers of problems: text for terminals, json for tools, github annotations, markdown for PRs.

Rendering is kept apart from collecting so every stage's problems look the same. Text is
read by people, so problems that say the same about several subjects (a warning per user
directory, a stale entry per host) are one line naming the subjects compactly; every other
format keeps every item.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import orjson

from compiler.cli.formats import Formats
from compiler.core.hostlist import fold_subjects
from compiler.core.problems import Problem, Severity
from compiler.core.textstyle import Style, md_cell, printable


def _place(p: Problem) -> str:
    """Where a problem is, for people: a path or name printed escaped (``printable``), as
    every text rendering prints it."""
    if p.where is not None:
        return printable(p.where.label())
    return printable(p.subject or "<site>")


def _also(p: Problem) -> str:
    return printable(", ".join(w.label() for w in p.also))


def generic(text: str, subject: str) -> str:
    """``text`` with its subject (an entry id) written ``<subject>`` and the subject's last
    part (a user's or host's name) ``<name>``: what texts about several subjects share."""
    text = _word(subject).sub("<subject>", text)
    name = subject.rpartition("/")[2]
    return _word(name).sub("<name>", text) if name != subject and len(name) > 2 else text


def _word(text: str) -> re.Pattern[str]:
    """``text`` where it stands on its own, not inside a longer name."""
    return re.compile(rf"(?<![\w.-]){re.escape(text)}(?![\w.-])")


@dataclass(frozen=True, slots=True)
class Grouped:
    """Problems alike but for their subjects: ``problem`` says it once (with placeholders)."""

    problem: Problem
    subjects: tuple[str, ...]

    def place(self) -> str:
        if len(self.subjects) > 1:
            return printable(fold_subjects(self.subjects))
        return _place(self.problem)


def group_by_subject(problems: Iterable[Problem]) -> list[Grouped]:
    """Problems without a file place that have the same code, severity, message and hint
    once their subject is set aside, as one each (in order of first appearance)."""
    groups: dict[object, list[Problem]] = {}
    for p in problems:
        if p.where is None and p.subject and not p.also:
            key: object = (p.code, p.severity, generic(p.message, p.subject),
                           generic(p.hint, p.subject))
        else:
            key = id(p)
        groups.setdefault(key, []).append(p)
    out: list[Grouped] = []
    for alike in groups.values():
        first = alike[0]
        if len(alike) > 1 and first.subject:
            first = replace(first, message=generic(first.message, first.subject),
                            hint=generic(first.hint, first.subject))
        out.append(Grouped(first, tuple(p.subject or "" for p in alike)))
    return out


def render_text(problems: Sequence[Problem], style: Style | None = None) -> str:
    """``file:line:col: error[CODE]: message`` then an indented hint, like compilers do;
    problems alike but for their subject are one, naming the subjects compactly."""
    s = style or Style(color=False)
    out: list[str] = []
    for group in group_by_subject(problems):
        p = group.problem
        sev = s.red("error") if p.severity is Severity.ERROR else s.yellow("warning")
        subject = f" ({printable(p.subject)})" if p.subject and p.where is not None else ""
        many = f" ({len(group.subjects)} alike)" if len(group.subjects) > 1 else ""
        out.append(f"{s.bold(group.place())}: {sev}[{p.code}]{many}: {printable(p.message)}"
                   f"{subject}")
        if p.also:
            out.append(f"  see also: {_also(p)}")
        if p.hint:
            out.append(f"  hint: {printable(p.hint)}")
    errors = sum(1 for p in problems if p.severity is Severity.ERROR)
    warnings = len(problems) - errors
    if problems:
        out.append(f"{errors} error(s), {warnings} warning(s)")
    return "\n".join(out) + ("\n" if out else "")


def render_json(problems: Sequence[Problem]) -> str:
    errors = sum(1 for p in problems if p.severity is Severity.ERROR)
    doc = {
        "valid": errors == 0,
        "errors": errors,
        "warnings": len(problems) - errors,
        "problems": [p.to_json() for p in problems],
    }
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"


def _gh_escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def _repository_top(folder: str) -> str | None:
    """The nearest folder at or above ``folder`` that holds ``.git`` (a folder, or the file
    of a worktree or submodule)."""
    while True:
        if os.path.exists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def github_path(file: str) -> str:
    """``file`` as GitHub places an annotation: relative to the top of the repository that
    holds it, whatever folder the command ran in; in a checkout without ``.git``, relative
    to ``$GITHUB_WORKSPACE``; as given when it is in neither."""
    path = os.path.realpath(file)
    top = _repository_top(os.path.dirname(path))
    workspace = os.environ.get("GITHUB_WORKSPACE")
    if top is None and workspace:
        top = os.path.realpath(workspace)
    if top is None or os.path.commonpath([top, path]) != top:
        return file
    return os.path.relpath(path, top)


def workflow_command(kind: str, message: str, *, file: str | None = None,
                     line: int | None = None, column: int | None = None,
                     title: str | None = None) -> str:
    """One GitHub workflow command, ``::warning file=F,line=L,col=C,title=T::message``
    (``kind`` error, warning or notice): data and properties escaped as the runner reads
    them, the file as ``github_path`` gives it."""
    props: list[str] = []
    if file is not None:
        props.append(f"file={_gh_escape(github_path(file), True)}")
        if line is not None:
            props += [f"line={line}", f"col={column or 1}"]
    if title is not None:
        props.append(f"title={_gh_escape(title, True)}")
    head = f"{kind} {','.join(props)}" if props else kind
    return f"::{head}::{_gh_escape(message)}"


def render_github(problems: Sequence[Problem]) -> str:
    """GitHub Actions workflow commands, so bad lines are annotated in the pull request."""
    out: list[str] = []
    for p in problems:
        kind = "error" if p.severity is Severity.ERROR else "warning"
        text = p.message if not p.subject or p.where else f"{p.subject}: {p.message}"
        if p.also:
            text += f" (see also {_also(p)})"
        if p.hint:
            text += f" (hint: {p.hint})"
        out.append(workflow_command(kind, text, file=p.file, line=p.line, column=p.column,
                                    title=p.code))
    return "\n".join(out) + ("\n" if out else "")


def render_markdown(problems: Sequence[Problem]) -> str:
    if not problems:
        return "No problems found.\n"
    rows = ["| | where | code | problem | how to fix |", "|---|---|---|---|---|"]
    for p in problems:
        icon = "❌" if p.severity is Severity.ERROR else "⚠️"
        also = f" (see also `{md_cell(_also(p))}`)" if p.also else ""
        rows.append(
            f"| {icon} | `{md_cell(_place(p))}` | {p.code} | {md_cell(p.message)}{also} "
            f"| {md_cell(p.hint)} |"
        )
    return "\n".join(rows) + "\n"


FORMATS: Formats[Sequence[Problem]] = Formats(
    "problem", render_text, json=render_json, github=render_github, markdown=render_markdown)


def render(problems: Sequence[Problem], fmt: str, style: Style | None = None) -> str:
    return FORMATS.render(problems, fmt, style)
