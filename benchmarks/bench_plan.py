"""Plan benchmark: wall and CPU time per stage in-process, and the real ``xce-plan`` in a child.

Run: ``.venv/bin/python benchmarks/bench_plan.py DESIRED LIVE [--unchanged LIVE0]
[--repeat 3] [--slice 20000]``, with DESIRED a compiled ``supply-map.json`` (``bindings.json``
beside it), LIVE a drifted snapshot and LIVE0 one without drift (``make_live.py --drift 0``;
default: DESIRED itself).

The in-process run is the CLI's own body (``reconciler.cmds.plan.main``) with timers wrapped
around the stage functions it calls: load desired, load live, plan, render (the json on
stdout), write (``--out``); "other" is the rest (argument parsing, problems, stdout). The
children run ``xce-plan --desired DESIRED --live LIVE --format json`` as a user would, with
stdout to /dev/null, once more with ``--out``, and once against LIVE0; their wall time, CPU
time and peak RSS (``ru_maxrss`` of each child, from ``wait4``) are what the targets are
checked against, as medians of ``--repeat`` runs. For comparison it times ``orjson.loads`` of
both files (the no-change plan is held to 3× that) and one deepdiff of the two whole maps,
measured on an evenly spread sample of ``--slice`` ids and extrapolated linearly (deepdiff
of 500,000 entries would take many minutes). The in-process and child plan files must be
identical.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest.mock import patch

import orjson
from bench_compile import ChildRun, Clock, _mib, _now, _timer
from deepdiff import DeepDiff

import reconciler.cmds.plan as plan_cli
import reconciler.plan_use_case as use_case

# (module, function name in it, stage): what the command and its use case call, looked up at
# call time.
TIMED = (
    (use_case, "load_desired", "load desired"),
    (use_case, "gather", "load live"),
    (use_case, "plan_for", "plan"),
    (plan_cli, "render_plan", "render"),
    (use_case, "save_plan", "write"),
)
STAGES = (*(stage for _, _, stage in TIMED), "other")


@dataclass(frozen=True, slots=True)
class Children:
    """The runs of one command line: medians are what the figures report."""

    name: str
    runs: tuple[ChildRun, ...]

    def median(self, field: str) -> float:
        return float(statistics.median(getattr(r, field) for r in self.runs))


@contextlib.contextmanager
def stage_clock() -> Iterator[Clock]:
    clock: Clock = {}
    with contextlib.ExitStack() as stack:
        for module, name, stage in TIMED:
            timed = _timer(getattr(module, name), stage, clock)
            stack.enter_context(patch.object(module, name, timed))
        yield clock


def run_in_process(argv: list[str]) -> tuple[Clock, int]:
    """One plan through the CLI body: [wall, CPU] seconds per stage and in total."""
    with (
        stage_clock() as clock,
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()) as said,
    ):
        wall, cpu = _now()
        code = plan_cli.main(argv)
        total = [time.perf_counter() - wall, time.process_time() - cpu]
    if code not in (0, 2):
        sys.exit(f"in-process xce-plan failed (exit {code}):\n{said.getvalue()}")
    for _, _, stage in TIMED:
        clock.setdefault(stage, [0.0, 0.0])
    clock["other"] = [t - sum(spent[i] for spent in clock.values()) for i, t in enumerate(total)]
    clock["total"] = total
    return clock, code


def xce_plan() -> str:
    exe = Path(sys.executable).parent / "xce-plan"
    return str(exe) if exe.exists() else "xce-plan"


def run_child(argv: Sequence[str]) -> ChildRun:
    """The real CLI in a subprocess, stdout to /dev/null; its own peak RSS, not ours."""
    start = time.perf_counter()
    proc = subprocess.Popen([xce_plan(), *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    return ChildRun(seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, proc.returncode)


def children(name: str, argv: list[str], repeat: int, ok: tuple[int, ...]) -> Children:
    runs = tuple(run_child(argv) for _ in range(repeat))
    bad = [r.exit_code for r in runs if r.exit_code not in ok]
    if bad:
        sys.exit(f"xce-plan {' '.join(argv)} exited {bad[0]}, expected {ok}")
    return Children(name, runs)


def load_json_seconds(files: Sequence[Path], repeat: int) -> tuple[float, list[Any]]:
    """Median wall time of reading and ``orjson.loads`` of all files, the collector paused
    (the fastest it gets); also the documents of the last run."""
    times = []
    docs: list[Any] = []
    for _ in range(repeat):
        docs = []
        gc.collect()
        gc.disable()
        start = time.perf_counter()
        docs = [orjson.loads(f.read_bytes()) for f in files]
        times.append(time.perf_counter() - start)
        gc.enable()
    return statistics.median(times), docs


def deepdiff_seconds(desired: Any, live: Any, sample: int) -> tuple[float, int, int]:
    """One deepdiff of the maps as id → entry objects, on every k-th id of either map,
    extrapolated linearly to all ids: (seconds, ids sampled, ids in all)."""
    d = {e["id"]: e for e in desired["entries"]}
    lv = {e["id"]: e for e in live["entries"]}
    ids = sorted(d.keys() | lv.keys())
    step = max(1, len(ids) // sample)
    chosen = ids[::step]
    d_part = {i: d[i] for i in chosen if i in d}
    l_part = {i: lv[i] for i in chosen if i in lv}
    start = time.perf_counter()
    DeepDiff(d_part, l_part)
    spent = time.perf_counter() - start
    return spent * len(ids) / len(chosen), len(chosen), len(ids)


def _stage_table(clock: Clock) -> None:
    print(f"  {'stage':<13} {'wall':>7}   {'CPU':>7}")
    for stage in (*STAGES, "total"):
        print(f"  {stage:<13} {clock[stage][0]:7.3f} s {clock[stage][1]:7.3f} s")


def _child_line(c: Children) -> None:
    walls = ", ".join(f"{r.seconds:.2f}" for r in c.runs)
    print(f"  {c.name:<14} wall {c.median('seconds'):5.2f} s  CPU {c.median('cpu_seconds'):5.2f} s"
          f"  peak RSS {_mib(int(c.median('max_rss_kib')))}  (wall of each run: {walls} s)")


def _median_clock(clocks: Sequence[Clock]) -> Clock:
    return {k: [statistics.median(c[k][i] for c in clocks) for i in (0, 1)] for k in clocks[0]}


def report(desired: Path, live: Path, unchanged: Path, repeat: int, sample: int) -> int:
    base = ["--desired", str(desired), "--format", "json"]
    with tempfile.TemporaryDirectory(prefix="bench-plan-") as tmp:
        work = Path(tmp)
        drifted = [run_in_process([*base, "--live", str(live), "--out", str(work / "in.json")])
                   for _ in range(repeat)]
        same = [run_in_process([*base, "--live", str(unchanged)]) for _ in range(repeat)]
        in_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        kids = [
            children("json", [*base, "--live", str(live)], repeat, (2,)),
            children("json --out", [*base, "--live", str(live), "--out",
                                    str(work / "child.json")], repeat, (2,)),
            children("no change", [*base, "--live", str(unchanged)], repeat, (0,)),
        ]
        all_children_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        identical = (work / "in.json").read_bytes() == (work / "child.json").read_bytes()
        plan = orjson.loads((work / "child.json").read_bytes())["body"]["plan"]
    load_s, docs = load_json_seconds([desired, live], repeat)
    same_load_s, _ = load_json_seconds([desired, unchanged], repeat)
    dd_s, dd_ids, all_ids = deepdiff_seconds(docs[0], docs[1], sample)
    del docs

    size = desired.stat().st_size + live.stat().st_size
    summary = plan["summary"]
    print(f"desired {desired}: {len(orjson.loads(desired.read_bytes())['entries']):,} entries; "
          f"live {live} ({size / 2**20:,.0f} MiB for both)")
    print(f"plan: {len(plan['actions']):,} actions (add {summary['add']}, change "
          f"{summary['change']}, destroy {summary['destroy']}), orphans {summary['orphans']}, "
          f"drift reported {summary['drift_reported']}, pending {summary['pending']}")
    print(f"machine: {os.cpu_count()} CPUs, Python {platform.python_version()} "
          f"({platform.machine()}, {platform.system()}), load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"in-process (reconciler.cmds.plan.main), 1% drift, median of {repeat}:")
    _stage_table(_median_clock([c for c, _ in drifted]))
    print(f"in-process, no change (live {unchanged}), median of {repeat}:")
    same_clock = _median_clock([c for c, _ in same])
    _stage_table(same_clock)
    print(f"  peak RSS of the benchmark process: {_mib(in_rss)}")
    print(f"subprocess: {xce_plan()} {' '.join(base)} --live LIVE [--out FILE] > /dev/null "
          f"(median of {repeat})")
    for c in kids:
        _child_line(c)
    print(f"  largest peak RSS of all children (RUSAGE_CHILDREN): {_mib(all_children_rss)}")
    no_change = kids[2].median("seconds")
    print(f"orjson.loads of desired + unchanged live: {same_load_s:.2f} s (collector paused, "
          f"median of {repeat}); no-change plan / that: CLI {no_change / same_load_s:.2f}x, "
          f"in-process {same_clock['total'][0] / same_load_s:.2f}x")
    print(f"orjson.loads of desired + drifted live: {load_s:.2f} s")
    cli_s = kids[0].median("seconds")
    print(f"deepdiff of the whole maps ≈ {dd_s:,.0f} s (a sample of {dd_ids:,} of {all_ids:,} "
          f"ids, extrapolated linearly) = {dd_s / cli_s:,.0f}x the xce-plan CLI")
    print(f"plan files of in-process and child runs identical: {'yes' if identical else 'NO'}")
    return 0 if identical else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Time xce-plan per stage and measure its memory.")
    p.add_argument("desired", type=Path, help="a compiled supply-map.json")
    p.add_argument("live", type=Path, help="a drifted live map (benchmarks/make_live.py)")
    p.add_argument("--unchanged", type=Path, help="a live map without drift (default: DESIRED)")
    p.add_argument("--repeat", type=int, default=3, help="runs of each kind (default 3)")
    p.add_argument("--slice", type=int, default=20_000, help="ids in the deepdiff sample")
    args = p.parse_args(argv)
    for f in (args.desired, args.live, args.unchanged):
        if f is not None and not f.is_file():
            p.error(f"no such file: {f}")
    return report(args.desired, args.live, args.unchanged or args.desired,
                  max(1, args.repeat), max(1, args.slice))


if __name__ == "__main__":
    sys.exit(main())
