"""Review renderings: text for terminals, markdown for the pull-request comment, json for tools."""

from __future__ import annotations

from itertools import groupby

import orjson

from compiler.cli.formats import Formats
from compiler.core.textstyle import Style
from compiler.policy.review import Delta, Review

SIGNS = {"gained": "+", "lost": "-", "deny-added": "~", "deny-removed": "!"}
VERBS = {
    "gained": "gains",
    "lost": "loses",
    "deny-added": "denies",
    "deny-removed": "no longer denies",
}


def _headline(review: Review) -> str:
    n, e = len(review.changes), len(review.escalations)
    if not n:
        return "no change to what any role or proxy may call"
    tail = f", {e} escalation(s): needs a second approval" if e else ", no escalation"
    return f"{n} change(s){tail}"


def _groups(review: Review) -> list[tuple[tuple[str, str], list[Delta]]]:
    keyed = groupby(review.changes, key=lambda c: (c.section.value, c.subject))
    return [(k, list(v)) for k, v in keyed]


def render_text(review: Review, style: Style | None = None) -> str:
    s = style or Style(color=False)
    out = [f"policy review {review.base}..{review.head}: {_headline(review)}"]
    for (section, subject), changes in _groups(review):
        header = f"{section} {s.bold(subject)}"
        for c in changes:
            if not c.items:
                header += f": {c.detail}" + (
                    s.red(f"  [escalation: {c.escalation}]") if c.escalation else ""
                )
        out.append(header)
        for c in changes:
            if c.items:
                sign = SIGNS.get(c.what, "~")
                colored = s.green(sign) if sign == "+" else s.red(sign)
                mark = s.red(f"  [escalation: {c.escalation}]") if c.escalation else ""
                words = f"{VERBS[c.what]} " if c.what.startswith("deny") else ""
                out.append(f"  {colored} {words}{c.detail}{mark}")
    return "\n".join(out) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(review: Review) -> str:
    out = [f"### Policy review `{review.base}`..`{review.head}`", ""]
    if review.escalations:
        out.append(f"**⚠️ {_headline(review)}**")
    else:
        out.append(_headline(review))
    if not review.changes:
        return "\n".join(out) + "\n"
    out += ["", "| | what | change | escalation |", "|---|---|---|---|"]
    for c in review.changes:
        icon = "⚠️" if c.escalation else ("➖" if c.what in ("lost", "removed") else "➕")
        if c.providers:
            scope = ", ".join(c.providers)
            change = f"{VERBS[c.what]} `{_md(', '.join(c.items))}` for {_md(scope)}"
        elif c.items:
            change = f"{VERBS[c.what]} `{_md(c.detail)}`"
        else:
            change = _md(c.detail)
        out.append(
            f"| {icon} | {c.section.value} `{_md(c.subject)}` | {change} "
            f"| {_md(c.escalation or '')} |"
        )
    return "\n".join(out) + "\n"


def render_json(review: Review) -> str:
    doc = {
        "base": review.base,
        "head": review.head,
        "status": review.status,
        "exit_code": review.exit_code,
        "changes": [c.to_json() for c in review.changes],
        "escalations": len(review.escalations),
    }
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"


FORMATS: Formats[Review] = Formats("review", render_text, markdown=render_markdown,
                                   json=render_json)


def render(review: Review, fmt: str, style: Style | None = None) -> str:
    return FORMATS.render(review, fmt, style)
