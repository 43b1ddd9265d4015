"""The benchmark gate (issue 23): compile and plan as ratios to a floor, against figures.json.

Run: ``scripts/bench.sh [--record] [--format json] [--hosts 20000] [--rounds 5]`` (or
``.venv/bin/python -m benchmarks.gate …`` from the repository's top).

It measures ``xce-compile`` and four ``xce-plan`` runs (1 % drift, no change, 100 % drift, an
empty live map) in this process, each as a ratio to a floor measured beside it in the same
run (``gate_workloads``), on inputs kept in a cache folder (``gate_inputs``), and compares
the ratios with those recorded in ``benchmarks/figures.json`` (``gate_figures``). Exit 0:
every ratio within 15 % of its record, or better; 1: one is more than 15 % worse (named on
stderr); 2: the run could not be judged (no figures, another size, a workload failed).
``--record`` writes the run's figures instead of comparing.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a file, too

import orjson

from benchmarks.gate_figures import (
    SAME,
    WORSE,
    Figures,
    GateError,
    Measured,
    Verdict,
    check_size,
    compare,
    load,
    save,
)
from benchmarks.gate_inputs import InputError, Inputs, prepare
from benchmarks.gate_workloads import WorkloadFailed, measure

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_HOSTS = 20_000
DEFAULT_ROUNDS = 5
EXIT_OK, EXIT_WORSE, EXIT_ERROR = 0, 1, 2


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="scripts/bench.sh", description="Measure compile and plan "
                                "as ratios to a decode floor; fail on a regression over 15%%.")
    p.add_argument("--record", action="store_true",
                   help="write this run's figures to --figures instead of comparing")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--hosts", type=int, default=DEFAULT_HOSTS,
                   help=f"size of the generated site (default {DEFAULT_HOSTS:,}: 87,015 entries)")
    p.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                   help=f"pairs of floor and workload per workload (default {DEFAULT_ROUNDS})")
    p.add_argument("--dir", type=Path,
                   default=Path(os.environ.get("XCE_BENCH_DIR") or ROOT / ".xce-bench"),
                   help="cache folder of the generated inputs (default $XCE_BENCH_DIR, "
                   "else .xce-bench/ in the repository)")
    p.add_argument("--figures", type=Path, default=ROOT / "benchmarks" / "figures.json",
                   help="the recorded figures (default benchmarks/figures.json)")
    return p


def machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in _cpuinfo()
                  if line.startswith("model name")), platform.processor() or "unknown CPU")
    return (f"{os.cpu_count()} CPUs ({model}), {platform.system()} {platform.machine()}, "
            f"Python {platform.python_version()}")


def _cpuinfo() -> list[str]:
    try:
        return Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return []


def commit() -> str:
    """HEAD of the repository, with ``+changes`` when tracked files differ from it."""
    def git(*argv: str) -> str:
        return subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    try:
        head = git("rev-parse", "HEAD")
        return head + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def recorded(args: argparse.Namespace) -> Figures | None:
    """The figures to compare with, read before a minute goes into measuring; with
    ``--record``, the previous ones when they can be shown beside the new (else None)."""
    try:
        figures = load(args.figures)
        check_size(figures, args.hosts)
    except GateError:
        if args.record:
            return None
        raise
    return figures


def _row(m: Measured, v: Verdict | None) -> dict[str, Any]:
    return {"workload": m.name, "cpu_s": round(m.cpu, 3), "floor": m.floor,
            "floor_cpu_s": round(m.floor_cpu, 3), "ratio": round(m.ratio, 3),
            "recorded": None if v is None else v.recorded,
            "change": None if v is None else round(v.change, 4),
            "status": None if v is None else v.status}


def _text(doc: dict[str, Any]) -> str:
    lines = [f"gate: {doc['hosts']:,} hosts ({doc['entries']:,} entries), median of "
             f"{doc['rounds']} rounds, CPU time; {doc['machine']}; load average "
             f"{doc['load_average']}"]
    rec = doc["recorded_figures"]
    if rec:
        sha = rec["commit"]  # 40 hex digits and "+changes", or "unknown"
        lines.append(f"recorded {rec['date']} at {sha[:12]}{sha[40:]} on {rec['machine']}")
    lines.append(f"{'workload':<15} {'CPU s':>7} {'floor':<12} {'floor s':>7} {'ratio':>6} "
                 f"{'recorded':>8} {'change':>8}  status")
    for r in doc["workloads"]:
        was = "—" if r["recorded"] is None else f"{r['recorded']:.2f}"
        change = "—" if r["change"] is None else f"{r['change']:+.1%}"
        lines.append(f"{r['workload']:<15} {r['cpu_s']:7.3f} {r['floor']:<12} "
                     f"{r['floor_cpu_s']:7.3f} {r['ratio']:6.2f} {was:>8} {change:>8}  "
                     f"{r['status'] or ''}")
    return "\n".join(lines) + "\n"


def report(inputs: Inputs, args: argparse.Namespace, measured: list[Measured],
           previous: tuple[Figures, list[Verdict]] | None) -> dict[str, Any]:
    verdicts = {v.measured.name: v for v in previous[1]} if previous else {}
    header = previous[0].to_json() if previous else None
    if header:
        del header["workloads"]
    return {"hosts": args.hosts, "entries": inputs.entries, "rounds": args.rounds,
            "machine": machine(), "commit": commit(),
            "load_average": " ".join(f"{x:.1f}" for x in os.getloadavg()),
            "recorded_figures": header,
            "workloads": [_row(m, verdicts.get(m.name)) for m in measured],
            "passed": all(v.status != WORSE for v in verdicts.values())}


def _record(args: argparse.Namespace, inputs: Inputs, measured: list[Measured]) -> None:
    figures = Figures(args.hosts, inputs.entries, args.rounds, machine(),
                      datetime.now(UTC).strftime("%Y-%m-%d"), commit(),
                      {m.name: m for m in measured})
    save(args.figures, figures)
    sys.stderr.write(f"recorded the figures to {args.figures}\n")


def _judged(args: argparse.Namespace, figures: Figures,
            measured: list[Measured]) -> tuple[Figures, list[Verdict]] | None:
    """The run against the figures; when recording, a workload new to them only means
    there is nothing to show beside it."""
    try:
        return figures, compare(measured, figures, args.hosts)
    except GateError:
        if args.record:
            return None
        raise


def run(args: argparse.Namespace) -> int:
    figures = recorded(args)
    inputs = prepare(args.dir, args.hosts)
    measured = measure(inputs, args.rounds)
    previous = None if figures is None else _judged(args, figures, measured)
    doc = report(inputs, args, measured, previous)
    sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"
                     if args.format == "json" else _text(doc))
    for v in previous[1] if previous and not args.record else []:
        if v.status != SAME:
            sys.stderr.write(f"{'FAIL' if v.status == WORSE else 'NOTE'} {v.why()}\n")
    if args.record:
        _record(args, inputs, measured)
        return EXIT_OK
    return EXIT_WORSE if not doc["passed"] else EXIT_OK


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.hosts < 1 or args.rounds < 1:
        parser().error("--hosts and --rounds must be at least 1")
    try:
        return run(args)
    except (GateError, InputError, WorkloadFailed) as err:
        sys.stderr.write(f"bench: {err}\n")
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
