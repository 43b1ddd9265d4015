"""Renderers of problems: text for terminals, json for tools, github annotations, markdown for PRs.

Rendering is kept apart from collecting so every stage's problems look the same.
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from compiler.formats import Formats
from compiler.problems import Problem, Severity
from compiler.textstyle import Style


def _place(p: Problem) -> str:
    if p.where is not None:
        return p.where.label()
    return p.subject or "<site>"


def _also(p: Problem) -> str:
    return ", ".join(w.label() for w in p.also)


def render_text(problems: Sequence[Problem], style: Style | None = None) -> str:
    """``file:line:col: error[CODE]: message`` then an indented hint, like compilers do."""
    s = style or Style(color=False)
    out: list[str] = []
    for p in problems:
        sev = s.red("error") if p.severity is Severity.ERROR else s.yellow("warning")
        subject = f" ({p.subject})" if p.subject and p.where is not None else ""
        out.append(f"{s.bold(_place(p))}: {sev}[{p.code}]: {p.message}{subject}")
        if p.also:
            out.append(f"  see also: {_also(p)}")
        if p.hint:
            out.append(f"  hint: {p.hint}")
    errors = sum(1 for p in problems if p.severity is Severity.ERROR)
    warnings = len(problems) - errors
    if problems:
        out.append(f"{errors} error(s), {warnings} warning(s)")
    return "\n".join(out) + ("\n" if out else "")


def problem_to_json(p: Problem) -> dict[str, object]:
    return {
        "code": p.code,
        "severity": p.severity.value,
        "file": p.file,
        "line": p.line,
        "column": p.column,
        "subject": p.subject,
        "message": p.message,
        "hint": p.hint,
        "also": [{"file": w.file, "line": w.line, "column": w.column} for w in p.also],
    }


def render_json(problems: Sequence[Problem]) -> str:
    errors = sum(1 for p in problems if p.severity is Severity.ERROR)
    doc = {
        "valid": errors == 0,
        "errors": errors,
        "warnings": len(problems) - errors,
        "problems": [problem_to_json(p) for p in problems],
    }
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"


def _gh_escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def render_github(problems: Sequence[Problem]) -> str:
    """GitHub Actions workflow commands, so bad lines are annotated in the pull request."""
    out: list[str] = []
    for p in problems:
        kind = "error" if p.severity is Severity.ERROR else "warning"
        props = [f"title={_gh_escape(p.code, True)}"]
        if p.where is not None:
            props.insert(0, f"file={_gh_escape(p.where.file, True)}")
            if p.line is not None:
                props.insert(1, f"line={p.line}")
                props.insert(2, f"col={p.column or 1}")
        text = p.message if not p.subject or p.where else f"{p.subject}: {p.message}"
        if p.also:
            text += f" (see also {_also(p)})"
        if p.hint:
            text += f" (hint: {p.hint})"
        out.append(f"::{kind} {','.join(props)}::{_gh_escape(text)}")
    return "\n".join(out) + ("\n" if out else "")


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(problems: Sequence[Problem]) -> str:
    if not problems:
        return "No problems found.\n"
    rows = ["| | where | code | problem | how to fix |", "|---|---|---|---|---|"]
    for p in problems:
        icon = "❌" if p.severity is Severity.ERROR else "⚠️"
        also = f" (see also `{_md_cell(_also(p))}`)" if p.also else ""
        rows.append(
            f"| {icon} | `{_md_cell(_place(p))}` | {p.code} | {_md_cell(p.message)}{also} "
            f"| {_md_cell(p.hint)} |"
        )
    return "\n".join(rows) + "\n"


FORMATS: Formats[Sequence[Problem]] = Formats(
    "problem", render_text, json=render_json, github=render_github, markdown=render_markdown)


def render(problems: Sequence[Problem], fmt: str, style: Style | None = None) -> str:
    return FORMATS.render(problems, fmt, style)
