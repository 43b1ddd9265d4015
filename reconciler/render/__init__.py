"""Renderings of a Plan: text (terminal), json (tools), markdown (pull-request comment),
github (annotations on the site-config lines a plan destroys or changes).

The plan is data; these only read it. They show what they are given: ``xce-plan`` hands
them the plan through ``reconciler.plan.redact.redacted`` first, as it does the plan file.
"""

from __future__ import annotations

from compiler.cli.formats import Formats
from compiler.core.gc_pause import gc_paused
from compiler.core.textstyle import Style
from reconciler.plan.model import Plan
from reconciler.render.github import render_github
from reconciler.render.jsonfmt import plan_json, render_json
from reconciler.render.markdown import render_markdown
from reconciler.render.text import render_text

FORMATS: Formats[Plan] = Formats("plan", render_text, json=render_json,
                                 markdown=render_markdown, github=render_github)


def render(plan: Plan, fmt: str, style: Style | None = None) -> str:
    """Render in one of FORMATS; ``style`` matters only for text (colour on a TTY).

    The cyclic GC is paused: a first plan creates every entry, and the collector would
    rescan both maps, still in memory, for the objects of each rendered action.
    """
    with gc_paused():
        return FORMATS.render(plan, fmt, style)


__all__ = ["FORMATS", "plan_json", "render", "render_github", "render_json", "render_markdown",
           "render_text"]
