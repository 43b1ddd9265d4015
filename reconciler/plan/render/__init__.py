"""Renderings of a Plan: text (terminal), json (tools), markdown (pull-request comment).

The plan is data; these only read it, and none of them ever prints a secret's value.
"""

from __future__ import annotations

from compiler.gc_pause import gc_paused
from compiler.textstyle import Style
from reconciler.plan.model import Plan
from reconciler.plan.render.jsonfmt import plan_json, render_json
from reconciler.plan.render.markdown import render_markdown
from reconciler.plan.render.text import render_text

FORMATS = ("text", "json", "markdown")


def render_plan(plan: Plan, fmt: str, style: Style | None = None) -> str:
    """Render in one of FORMATS; ``style`` matters only for text (colour on a TTY).

    The cyclic GC is paused: a first plan creates every entry, and the collector would
    rescan both maps, still in memory, for the objects of each rendered action.
    """
    with gc_paused():
        if fmt == "json":
            return render_json(plan)
        if fmt == "markdown":
            return render_markdown(plan)
        if fmt == "text":
            return render_text(plan, style)
    raise ValueError(f"unknown plan format {fmt!r}; use one of {', '.join(FORMATS)}")


__all__ = ["FORMATS", "plan_json", "render_json", "render_markdown", "render_plan",
           "render_text"]
