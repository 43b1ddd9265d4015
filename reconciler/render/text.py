"""Terminal rendering in the style of ``terraform plan``; colour only on a TTY."""

from __future__ import annotations

from compiler.cli.problem_render import render_text as render_problems
from compiler.core.textstyle import Style
from reconciler.plan.model import Plan
from reconciler.render.common import (
    NOTE_TITLES,
    action_line,
    change_lines,
    note_line,
    outcome_line,
    summary_line,
    symbol,
    unknown_by_provider,
)


def _paint(style: Style, sym: str, text: str) -> str:
    if sym == "+":
        return style.green(text)
    if sym == "~":
        return style.yellow(text)
    return style.red(text)


def render_text(plan: Plan, style: Style | None = None) -> str:
    s = style or Style(color=False)
    out: list[str] = []
    if plan.actions:
        out.append(s.bold("xce-plan will perform these actions, in this order:"))
        for a in plan.actions:
            sym = symbol(a.verb)
            out.append(f"  {_paint(s, sym, sym)} {action_line(a)}")
            out.extend(f"      {_paint(s, '~', '~')} {line}" for line in change_lines(a))
        out.append("")
    for name, title in NOTE_TITLES.items():
        notes = getattr(plan, name)
        if notes:
            out.append(s.bold(f"{title}: {len(notes)}"))
            out.extend(f"  ! {note_line(n)}" for n in notes)
            out.append("")
    if plan.unknown:
        out.append(s.bold(f"Unknown (provider did not report; nothing planned): "
                          f"{len(plan.unknown)}"))
        out.extend(f"  ? {p}: {what} — {reason}"
                   for p, what, reason in unknown_by_provider(plan.unknown))
        out.append("")
    if plan.problems:
        out.append(render_problems(plan.problems, s).rstrip("\n"))
        out.append("")
    outcome = outcome_line(plan)
    out.append(s.bold(summary_line(plan)) if outcome is None else s.green(outcome))
    if plan.blocked:
        out.append(s.red("This plan is refused by a guard (see above) and cannot be applied."))
    return "\n".join(out) + "\n"
