"""``xce-map``: report host and job events to the embedded controller map, and show what it holds.

The reporter stands in for a worker join, the node manager or the scheduler on sites
(and tests) that run the embedded map instead of a real controller: ``report join``
confirms an expected host or records a discovered one, ``available``, ``lost`` and
``drained`` move it on; ``job start|requeue|end|fetch`` records job states (what job
directory retention reads); ``restart`` begins a new serving session, as a controller
restart does, after which the workers rejoin.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from compiler.cli.options import add_format, add_workdir
from compiler.cli.runner import EXIT_OK, UsageParser, run_cli
from compiler.cli.site_locate import FOUND_HELP as SITE_HELP
from compiler.cli.site_locate import require_site
from compiler.contract.build_files import WORKDIR
from compiler.contract.provider_params import ControllerMapParams
from compiler.contract.vocabulary import EntryKind
from compiler.core.canonical import dumps
from compiler.core.hostlist import HostlistError, expand
from compiler.core.names import did_you_mean, path_unsafe_reason
from compiler.core.problems import Problem, UserError
from compiler.core.times import format_utc, parse_instant
from reconciler.protocol import ErrorCode, ProviderError
from reconciler.providers.controller_map.codes import (
    BAD_TIME,
    HINTS,
    HOST_CODES,
    JOB_CODES,
    JOB_USER,
    MAP_BUSY,
    MAP_UNUSABLE,
    NOT_A_HOSTLIST,
    NOT_A_JOB,
    UNKNOWN_KIND,
    USAGE,
)
from reconciler.providers.controller_map.entries import HELD_KINDS
from reconciler.providers.controller_map.jobs import JOB_KIND, JobEvent, is_job_id, record_jobs
from reconciler.providers.controller_map.lifecycle import REPORTER_EVENTS, REPORTING, Event
from reconciler.providers.controller_map.provider import map_path
from reconciler.providers.controller_map.reporter import (
    Cause,
    EventRefused,
    Moved,
    Refusal,
    Report,
    record,
)
from reconciler.providers.controller_map.store import MapStore, decode_docs

PROG = "xce-map"
SHOWN = 20  # per-entry lines printed before the rest is summed up


class _Parser(UsageParser):
    usage_code = USAGE


def _at(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--at", help="when it happened, ISO 8601 (default: now; no zone = UTC)")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--site", type=Path,
                   help=f"site-config folder; the workdir defaults to <site>/{WORKDIR} "
                   f"(default: {SITE_HELP})")
    add_workdir(p)
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
        _at(e)
    job = sub.add_parser("job", help="record a job event as the scheduler would")
    job_events = job.add_subparsers(dest="event", required=True, parser_class=_Parser)
    for job_event in JobEvent:
        j = job_events.add_parser(job_event.value, help=f"jobs reported {job_event.value}")
        j.add_argument("jobs", metavar="JOB", nargs="+", help="job ids (decimal digits)")
        j.add_argument("--user", help="the jobs' user (needed to start a job new to the map)")
        _at(j)
    restart = sub.add_parser("restart", help="begin a new serving session, as a controller "
                             "restart does; the workers then rejoin")
    _at(restart)
    show = sub.add_parser("show", help="print the entries of the map")
    show.add_argument("--kind", help=f"only entries of this kind ({', '.join(HELD_KINDS)})")
    add_format(show, ("text", "json"), "the entries")
    return p


def _db_path(args: argparse.Namespace) -> Path:
    if args.db is not None:
        return Path(args.db)
    # a site that is not there is refused: a map made for it is one nothing plans from
    workdir = args.workdir if args.workdir is not None else require_site(
        args.site, hint="run it in the site's folder, or pass --site, --workdir or --db") / WORKDIR
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


def _jobs(texts: Sequence[str]) -> list[str]:
    """The job ids, or every one that is not a job id as a problem."""
    bad = [t for t in texts if not is_job_id(t)]
    if bad:
        raise UserError([HINTS.problem(NOT_A_JOB, f"{t!r} is not a job id", PROG)
                         for t in bad[:SHOWN]])
    return list(texts)


def _user(text: str | None) -> str | None:
    reason = None if text is None else path_unsafe_reason(text)
    if reason is not None:
        message = f"--user {text!r} cannot be a user name (it names the job directory): {reason}"
        raise UserError([HINTS.problem(JOB_USER, message, PROG, "give the job's login name")])
    return text


def _instant(text: str | None) -> float:
    if text is None:
        return time.time()
    try:
        moment = parse_instant(text)
    except ValueError:
        message = f"--at {text!r} is not an ISO 8601 time"
        raise UserError([HINTS.problem(BAD_TIME, message, PROG)]) from None
    return moment.timestamp()


def _utc(seconds: Any) -> str:
    if not isinstance(seconds, int | float):
        return "-"
    return format_utc(seconds)


def _refusal_problems(
    event: str, refusals: Sequence[Refusal], codes: Mapping[Cause, str], noun: str
) -> list[Problem]:
    problems = [HINTS.problem(codes[r.cause], r.reason, r.id) for r in refusals[:SHOWN]]
    if len(refusals) > SHOWN:
        rest = f"{len(refusals) - SHOWN} more {noun}(s) refused '{event}' the same way"
        problems.append(HINTS.problem(codes[refusals[SHOWN].cause], rest, PROG))
    return problems


def _host_line(m: Moved) -> str:
    if m.before is None:
        return f"{m.id}: discovered, {m.after} (awaiting admission)"
    return f"{m.id}: {m.before} → {m.after}"


def _job_line(m: Moved) -> str:
    spec = m.entry.spec
    if m.before is None:
        return f"{m.id}: started, {m.after} ({spec.get('user')}, attempt 1)"
    if m.before == m.after:
        return f"{m.id}: {m.after}, outputs fetched at {_utc(spec.get('fetched'))}"
    return f"{m.id}: {m.before} → {m.after} (attempt {spec.get('attempt')})"


def _report_lines(report: Report, line: Callable[[Moved], str], noun: str) -> list[str]:
    lines = [line(m) for m in report.moved[:SHOWN]]
    already = "outputs already fetched" if report.event == JobEvent.FETCH else "already {}"
    lines.extend(f"{entry_id}: {already.format(state)}"
                 for entry_id, state in report.unchanged[:SHOWN])
    hidden = len(report.moved) + len(report.unchanged) - len(lines)
    if hidden > 0:
        lines.append(f"… and {hidden} more")
    total = len(report.moved) + len(report.unchanged)
    lines.append(
        f"recorded {report.event} for {total} {noun}(s): {len(report.moved)} changed, "
        f"{len(report.unchanged)} unchanged; generation {report.generation}"
    )
    return lines


def _recorded(path: Path, event: str, recorder: Callable[[MapStore], Report],
              codes: Mapping[Cause, str], noun: str, line: Callable[[Moved], str]) -> int:
    """One batch of host or job events, recorded all or nothing, and what moved."""
    with _opened(path, create=True) as store:
        try:
            report = recorder(store)
        except EventRefused as err:
            raise UserError(_refusal_problems(event, err.refusals, codes, noun)) from None
    sys.stdout.write("\n".join(_report_lines(report, line, noun)) + "\n")
    return EXIT_OK


def _report(args: argparse.Namespace, path: Path) -> int:
    event = Event(args.event)
    hosts, at = _hosts(args.hosts), _instant(args.at)
    return _recorded(path, event, lambda store: record(store, event, hosts, at, args.provider),
                     HOST_CODES, EntryKind.HOST, _host_line)


def _job(args: argparse.Namespace, path: Path) -> int:
    event = JobEvent(args.event)
    jobs, user, at = _jobs(args.jobs), _user(args.user), _instant(args.at)
    return _recorded(path, event, lambda store: record_jobs(store, event, jobs, at, args.provider,
                                                            user=user),
                     JOB_CODES, EntryKind.JOB, _job_line)


def _restart(args: argparse.Namespace, path: Path) -> int:
    """A new session; the map's states stay, but each worker must join again (P8)."""
    at = _instant(args.at)
    with _opened(path, create=False) as store, store.change() as tx:
        before, after = tx.session(), tx.new_session(at)
        hosts = tx.count_states(EntryKind.HOST.value, REPORTING)
    sys.stdout.write(
        f"controller map {args.provider}: new session {after.id} since {_utc(after.since)} "
        f"(was {before.id} since {_utc(before.since)})\n"
        f"workers must rejoin: {hosts} host(s) joining, available or draining; report each "
        "as it reconnects (xce-map report join HOSTS)\n"
        "until they have (site.settle wait: rejoin) or the settle window has passed, no "
        "orphan or never-joined removal is planned\n"
    )
    return EXIT_OK


def _columns(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            for row in rows]


def _entry_row(e: Mapping[str, Any]) -> tuple[str, ...]:
    amount = "-" if e.get("amount") is None else str(e["amount"])
    since = _utc(e.get("spec", {}).get("since"))
    return (e["id"], e["state"], e["source"], e.get("owner") or "-", since, amount)


def _job_row(e: Mapping[str, Any]) -> tuple[str, ...]:
    spec = e.get("spec", {})
    return (e["id"], e["state"], str(spec.get("user", "-")), str(spec.get("attempt", "-")),
            _utc(spec.get("started")), _utc(spec.get("ended")), _utc(spec.get("fetched")))


def _table(entries: list[dict[str, Any]], generation: int, kind: str | None) -> str:
    """Jobs alone get their own columns; any other listing the entry's generic ones."""
    if kind == JOB_KIND:
        header = ("ID", "STATE", "USER", "ATTEMPT", "STARTED", "ENDED", "FETCHED")
        rows = [header, *map(_job_row, entries)]
    else:
        rows = [("ID", "STATE", "SOURCE", "OWNER", "SINCE", "AMOUNT"), *map(_entry_row, entries)]
    lines = _columns(rows)
    lines.append(f"{len(entries)} entries, generation {generation}")
    return "\n".join(lines) + "\n"


def _show(args: argparse.Namespace, path: Path) -> int:
    kind = args.kind
    if kind is not None and kind not in HELD_KINDS:
        hint = did_you_mean(kind, HELD_KINDS) or f"kinds: {', '.join(HELD_KINDS)}"
        message = f"the controller map holds no kind '{kind}'"
        raise UserError([HINTS.problem(UNKNOWN_KIND, message, PROG, hint)])
    with _opened(path, create=False) as store, store.read() as tx:
        generation, docs, session = tx.generation(), tx.docs(kind), tx.session()
    entries = decode_docs(docs)
    if args.format == "json":
        doc = {"generations": {args.provider: generation}, "entries": entries,
               "sessions": {args.provider: session.to_json()}}
        sys.stdout.write(dumps(doc).decode())
    else:
        sys.stdout.write(_table(entries, generation, kind))
    return EXIT_OK


COMMANDS = {"report": _report, "job": _job, "restart": _restart, "show": _show}


def _body(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    return COMMANDS[args.command](args, _db_path(args))


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(PROG, lambda: _body(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
