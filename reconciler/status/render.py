"""Views of a ``SiteStatus``: text for a terminal, markdown for an issue or pull request, and
a JSON document for tools, all from the same rows (``_sections``), so they never disagree.
Times are UTC; an age is how long before the status's ``now`` (store clock or --as-of)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from compiler.cli.formats import Formats
from compiler.core.canonical import dumps
from compiler.core.textstyle import Style, md_cell, printable
from compiler.core.times import format_utc
from compiler.core.units import duration_text
from reconciler.status.gather import (
    ConfigState,
    InventoryState,
    LastApply,
    LeaseState,
    ProxySeen,
    SiteStatus,
    WaitingPlan,
)

DIGEST_CHARS = 12  # a digest as a person reads it


def _when(at: float | None) -> str | None:
    return None if at is None else format_utc(at, "offset")


def _age(at: float | None, now: float) -> str:
    """``2026-05-01 12:00:00 UTC (5 min ago)``, or ``-``."""
    if at is None:
        return "-"
    return f"{format_utc(at, 'seconds')} ({duration_text(now - at)} ago)"


def to_json(status: SiteStatus) -> dict[str, Any]:
    """The status as a JSON document: instants in ISO 8601 with offset, ages in seconds."""
    now = status.now
    return {
        "site": status.site, "as_of": _when(now),
        "proxy_settings": status.settings.to_json(),
        "applied_config": _config_json(status.config),
        "last_apply": _apply_json(status.last_apply),
        "proxies": [{"proxy": p.proxy, "instance": p.instance, "host": p.host, "pid": p.pid,
                     "state": p.state, "started": _when(p.started), "last_seen": _when(p.seen),
                     "seen_ago": round(now - p.seen, 3)} for p in status.proxies],
        "leases": [{"provider": lease.provider, "holder": lease.holder,
                    "instance": lease.instance, "epoch": lease.epoch, "state": lease.state,
                    "since": _when(lease.since)} for lease in status.leases],
        "inventories": [_inventory_json(i, status.settings.inventory_max_age)
                        for i in status.inventories],
        "queue": dict(status.queue), "refusals": status.refusals,
        "open_drift": dict(status.drift),
        "plans_waiting": [{"desired_digest": p.desired_digest, "commit": p.commit,
                           "branch": p.branch, "recorded": _when(p.recorded)}
                          for p in status.plans],
    }


def _config_json(config: ConfigState | None) -> dict[str, Any] | None:
    if config is None:
        return None
    return {"seq": config.seq, "digest": config.digest, "applied": _when(config.applied),
            "applied_by": config.applied_by}


def _apply_json(last: LastApply) -> dict[str, Any]:
    run = None if last.run_id is None else {
        "run_id": last.run_id, "status": last.run_status, "started": _when(last.run_started),
        "finished": _when(last.run_finished)}
    return {"digest": last.digest, "revision": last.revision, "applied": _when(last.applied),
            "last_run": run}


def _inventory_json(inv: InventoryState, max_age: float) -> dict[str, Any]:
    return {"provider": inv.provider, "proxy": inv.proxy, "epoch": inv.epoch,
            "generation": inv.generation, "complete": inv.complete, "entries": inv.entries,
            "published": _when(inv.published), "age": round(inv.age, 3), "max_age": max_age,
            "stale": inv.stale, "error": inv.error, "behind_a_change": inv.behind}


# -- the rows text and markdown share ------------------------------------------------------

Table = tuple[str, tuple[str, ...], list[tuple[str, ...]]]  # title, columns, rows


def _proxy_rows(proxies: Sequence[ProxySeen], now: float) -> list[tuple[str, ...]]:
    return [(p.proxy, p.instance, p.host, str(p.pid), p.state, _age(p.seen, now))
            for p in proxies]


def _lease_rows(leases: Sequence[LeaseState], now: float) -> list[tuple[str, ...]]:
    return [(lease.provider, lease.holder, lease.instance, str(lease.epoch), lease.state,
             _age(lease.since, now)) for lease in leases]


def _inventory_state(inv: InventoryState, max_age: float) -> str:
    """Why a plan would (not) trust it: its error, its age past the bound, a change since."""
    notes = [f"error: {inv.error}"] if inv.error else []
    if inv.stale:
        notes.append(f"stale: older than {duration_text(max_age)}")
    if inv.behind:
        notes.append("behind a change")
    if not inv.complete:
        notes.append("incomplete")
    return "; ".join(notes) or "fresh"


def _inventory_rows(status: SiteStatus) -> list[tuple[str, ...]]:
    bound = status.settings.inventory_max_age
    return [(i.provider, i.proxy, "-" if i.generation is None else str(i.generation),
             str(i.entries), duration_text(i.age), _inventory_state(i, bound))
            for i in status.inventories]


def _plan_rows(plans: Sequence[WaitingPlan], now: float) -> list[tuple[str, ...]]:
    return [(p.desired_digest[:DIGEST_CHARS], p.commit[:DIGEST_CHARS] or "-", p.branch or "-",
             _age(p.recorded, now)) for p in plans]


def _tables(status: SiteStatus) -> list[Table]:
    now = status.now
    return [
        ("Proxies", ("proxy", "instance", "host", "pid", "state", "last seen"),
         _proxy_rows(status.proxies, now)),
        ("Provider leases", ("provider", "holder", "instance", "epoch", "state", "since"),
         _lease_rows(status.leases, now)),
        (f"Published inventories (bound {duration_text(status.settings.inventory_max_age)})",
         ("provider", "proxy", "generation", "entries", "age", "state"),
         _inventory_rows(status)),
        ("Reviewed plans waiting", ("digest", "commit", "branch", "recorded"),
         _plan_rows(status.plans, now)),
    ]


def _counts(pairs: Sequence[tuple[str, int]]) -> str:
    return ", ".join(f"{name} {n}" for name, n in pairs) or "none"


def _facts(status: SiteStatus) -> list[tuple[str, str]]:
    """The one-line facts: configuration, last apply, queue, refusals, drift."""
    now, config, last = status.now, status.config, status.last_apply
    applied = "none recorded" if config is None else (
        f"seq {config.seq}, {_age(config.applied, now)} by {config.applied_by}")
    apply = "none recorded" if last.digest is None else (
        f"digest {last.digest[:DIGEST_CHARS]}"
        + (f", revision {last.revision}" if last.revision else "")
        + f", {_age(last.applied, now)}")
    run = "none recorded" if last.run_id is None else (
        f"{last.run_id}: {last.run_status}, started {_age(last.run_started, now)}")
    drift = sum(n for _, n in status.drift)
    return [("Applied configuration", applied), ("Last apply", apply), ("Last apply run", run),
            ("Call queue", _counts(status.queue)), ("Refusals", str(status.refusals)),
            ("Open drift", f"{drift}" + (f" ({_counts(status.drift)})" if drift else ""))]


def _grid(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    table = [[c.upper() for c in columns], *[[printable(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in table) for i in range(len(columns))]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
            for row in table]


def render_text(status: SiteStatus, style: Style | None = None) -> str:
    style = style or Style(False)
    lines = [style.bold(f"Site {printable(status.site)}") + f", as of "
             f"{format_utc(status.now, 'seconds')}", ""]
    lines += [f"{name}: {printable(value)}" for name, value in _facts(status)]
    for title, columns, rows in _tables(status):
        lines += ["", style.bold(title) + ("" if rows else ": none")]
        lines += _grid(columns, rows) if rows else []
    return "\n".join(lines) + "\n"


def render_markdown(status: SiteStatus) -> str:
    lines = [f"## Site `{md_cell(status.site)}`, as of {format_utc(status.now, 'seconds')}", ""]
    lines += [f"- **{name}**: {md_cell(value)}" for name, value in _facts(status)]
    for title, columns, rows in _tables(status):
        lines += ["", f"### {title}", ""]
        if not rows:
            lines.append("None.")
            continue
        lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(map(md_cell, row)) + " |" for row in rows]
    return "\n".join(lines) + "\n"


FORMATS: Formats[SiteStatus] = Formats(
    "status", render_text, json=lambda s: dumps(to_json(s)).decode(), markdown=render_markdown)
