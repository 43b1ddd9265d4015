"""``xce-map``: report host events to the embedded controller map, and show what it holds.

The reporter stands in for a worker join or the node manager on sites (and tests) that
run the embedded map instead of a real controller: ``report join`` confirms an expected
host or records a discovered one, ``available``, ``lost`` and ``drained`` move it on.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from compiler.canonical import dumps
from compiler.cli_runner import EXIT_OK, UsageParser, run_cli
from compiler.hostlist import HostlistError, expand
from compiler.model.provider_params import ControllerMapParams
from compiler.names import did_you_mean
from compiler.problems import Hints, Problem, UserError
from reconciler.cli.options import add_workdir
from reconciler.protocol import ErrorCode, ProviderError
from reconciler.providers.controller_map.entries import HELD_KINDS
from reconciler.providers.controller_map.lifecycle import REPORTER_EVENTS, Event
from reconciler.providers.controller_map.provider import map_path
from reconciler.providers.controller_map.reporter import EventRefused, Refusal, Report, record
from reconciler.providers.controller_map.store import MapStore, decode_docs

PROG = "xce-map"
SHOWN = 20  # per-host lines printed before the rest is summed up
NOTHING = "nothing in this batch was recorded"

# the problem codes (docs/errors.md "Controller map"), named once
MAP_UNUSABLE = "XCE730"
MAP_BUSY = "XCE731"
NOT_A_HOSTLIST = "XCE732"
EVENT_REFUSED = "XCE733"
UNKNOWN_HOST = "XCE734"
BAD_TIME = "XCE735"
UNKNOWN_KIND = "XCE736"
USAGE = "XCE737"

HINTS = Hints({
    MAP_BUSY: "try again when the other writer is done",
    EVENT_REFUSED: NOTHING,
    UNKNOWN_HOST: f"report join first to add it; {NOTHING}",
    BAD_TIME: "write it like 2026-11-29T09:40:00Z",
})


class _Parser(UsageParser):
    usage_code = USAGE


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--site", type=Path, default=Path("site-config"),
                   help="site-config folder; the workdir defaults to <site>/.xce")
    add_workdir(p, "<site>/.xce")
    p.add_argument("--provider", default="controller",
                   help="the controller-map provider's name (default: controller)")
    p.add_argument("--db", type=Path,
                   help="the map file (default: <workdir>/providers/<name>/map.sqlite)")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    report = sub.add_parser("report", help="record a host event as a worker or node manager would")
    events = report.add_subparsers(dest="event", required=True, parser_class=_Parser)
    for event in REPORTER_EVENTS:
        e = events.add_parser(event.value, help=f"hosts reported {event.value}")
        e.add_argument("hosts", metavar="HOST", help="a host name or hostlist (cn[001-064])")
        e.add_argument("--at", help="when it happened, ISO 8601 (default: now; no zone = UTC)")
    show = sub.add_parser("show", help="print the entries of the map")
    show.add_argument("--kind", help=f"only entries of this kind ({', '.join(HELD_KINDS)})")
    show.add_argument("--format", choices=("text", "json"), default="text",
                      help="text for people, json for tools (default: text)")
    return p


def _db_path(args: argparse.Namespace) -> Path:
    if args.db is not None:
        return Path(args.db)
    workdir = args.workdir if args.workdir is not None else args.site / ".xce"
    return map_path(args.provider, ControllerMapParams.model_validate({}), Path(workdir))


@contextmanager
def _opened(path: Path, *, create: bool) -> Iterator[MapStore]:
    """The map file; a missing, foreign or busy file is one clear error."""
    try:
        store = MapStore(path, create=create)
        try:
            yield store
        finally:
            store.close()
    except ProviderError as err:
        if err.code is ErrorCode.UNAVAILABLE:
            raise UserError([HINTS.problem(MAP_BUSY, err.message, str(path))]) from None
        hint = "check --db, --workdir and --provider" + ("" if create else "; report a join first")
        raise UserError([HINTS.problem(MAP_UNUSABLE, err.message, str(path), hint)]) from None


def _hosts(expression: str) -> list[str]:
    try:
        return expand(expression)
    except HostlistError as err:
        message = f"{expression!r} is not a host name or hostlist: {err.message}"
        hint = f"at character {err.offset + 1}; write a name (cn001) or a hostlist (cn[001-064])"
        raise UserError([HINTS.problem(NOT_A_HOSTLIST, message, PROG, hint)]) from None


def _instant(text: str | None) -> float:
    if text is None:
        return time.time()
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        message = f"--at {text!r} is not an ISO 8601 time"
        raise UserError([HINTS.problem(BAD_TIME, message, PROG)]) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _refusal_problems(event: Event, refusals: Sequence[Refusal]) -> list[Problem]:
    problems = [HINTS.problem(UNKNOWN_HOST if r.unknown else EVENT_REFUSED, r.reason, r.id)
                for r in refusals[:SHOWN]]
    if len(refusals) > SHOWN:
        rest = f"{len(refusals) - SHOWN} more host(s) refused '{event.value}' the same way"
        problems.append(HINTS.problem(EVENT_REFUSED, rest, PROG))
    return problems


def _report_lines(report: Report) -> list[str]:
    lines = []
    for m in report.moved[:SHOWN]:
        if m.before is None:
            lines.append(f"{m.id}: discovered, {m.after} (awaiting admission)")
        else:
            lines.append(f"{m.id}: {m.before} → {m.after}")
    lines.extend(f"{host}: already {state}" for host, state in report.unchanged[: SHOWN])
    hidden = len(report.moved) + len(report.unchanged) - len(lines)
    if hidden > 0:
        lines.append(f"… and {hidden} more")
    total = len(report.moved) + len(report.unchanged)
    lines.append(
        f"recorded {report.event.value} for {total} host(s): {len(report.moved)} changed, "
        f"{len(report.unchanged)} unchanged; generation {report.generation}"
    )
    return lines


def _report(args: argparse.Namespace, path: Path) -> int:
    event = Event(args.event)
    hosts, at = _hosts(args.hosts), _instant(args.at)
    with _opened(path, create=True) as store:
        try:
            report = record(store, event, hosts, at, args.provider)
        except EventRefused as err:
            raise UserError(_refusal_problems(event, err.refusals)) from None
    sys.stdout.write("\n".join(_report_lines(report)) + "\n")
    return EXIT_OK


def _since(entry: dict[str, Any]) -> str:
    since = entry.get("spec", {}).get("since")
    if not isinstance(since, int | float):
        return "-"
    return datetime.fromtimestamp(since, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _table(entries: list[dict[str, Any]], generation: int) -> str:
    header = ("ID", "STATE", "SOURCE", "OWNER", "SINCE", "AMOUNT")
    rows = [header] + [
        (
            e["id"],
            e["state"],
            e["source"],
            e.get("owner") or "-",
            _since(e),
            "-" if e.get("amount") is None else str(e["amount"]),
        )
        for e in entries
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in rows]
    lines.append(f"{len(entries)} entries, generation {generation}")
    return "\n".join(lines) + "\n"


def _show(args: argparse.Namespace, path: Path) -> int:
    kind = args.kind
    if kind is not None and kind not in HELD_KINDS:
        hint = did_you_mean(kind, HELD_KINDS) or f"kinds: {', '.join(HELD_KINDS)}"
        message = f"the controller map holds no kind '{kind}'"
        raise UserError([HINTS.problem(UNKNOWN_KIND, message, PROG, hint)])
    with _opened(path, create=False) as store, store.read() as tx:
        generation, docs = tx.generation(), tx.docs(kind)
    entries = decode_docs(docs)
    if args.format == "json":
        doc = {"generations": {args.provider: generation}, "entries": entries}
        sys.stdout.write(dumps(doc).decode())
    else:
        sys.stdout.write(_table(entries, generation))
    return EXIT_OK


def _body(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    path = _db_path(args)
    if args.command == "report":
        return _report(args, path)
    return _show(args, path)


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(PROG, lambda: _body(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
