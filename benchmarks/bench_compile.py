"""Compile benchmark: wall time per stage in-process, and the real ``xce-compile`` in a child.

Run: ``.venv/bin/python benchmarks/bench_compile.py SITE_DIR [--repeat 3]``.

The in-process run is the CLI's own body (``compiler.cmds.compile.main``) with timers wrapped around
the stage functions it calls, so the stages measured are exactly the ones that run, not a
copy of the pipeline: load (YAML), validate (pydantic models), checks, emit (entries and
the map), policy (allowlists, when a ``policies/`` folder is beside the site), locate
(problems to lines), revision (git), serialize (JSON bytes and digest), write (files and
manifest); "other" is the rest (argument parsing, rendering). The child
runs ``xce-compile SITE --out DIR`` as a user would; its wall time and peak RSS
(``ru_maxrss`` from ``wait4``) are what the targets are checked against. Both runs must
write the same bytes.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest.mock import patch

import orjson

import compiler.cmds.compile as cli_mod
import compiler.compile as compile_mod

# (module, function, stage): the functions the CLI body calls, looked up at call time.
TIMED: tuple[tuple[ModuleType, str, str], ...] = (
    (compile_mod, "load_site", "load"),
    (compile_mod, "build_document", "validate"),
    (compile_mod, "check_document", "checks"),
    (compile_mod, "compile_files", "compile"),
    (compile_mod, "compile_policies", "policy"),
    (cli_mod, "located", "locate"),
    (cli_mod, "site_revision", "revision"),
    (cli_mod, "serialize", "serialize"),
    (cli_mod, "write_outputs", "write"),
)
STAGES = (
    "load",
    "validate",
    "checks",
    "emit",
    "policy",
    "locate",
    "revision",
    "serialize",
    "write",
    "other",
)


@dataclass(frozen=True, slots=True)
class ChildRun:
    seconds: float
    cpu_seconds: float
    max_rss_kib: int
    exit_code: int


Clock = dict[str, list[float]]  # stage -> [wall seconds, CPU seconds]


def _now() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _timer(fn: Callable[..., Any], stage: str, clock: Clock) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        wall, cpu = _now()
        try:
            return fn(*args, **kwargs)
        finally:
            spent = clock.setdefault(stage, [0.0, 0.0])
            spent[0] += time.perf_counter() - wall
            spent[1] += time.process_time() - cpu

    return timed


@contextlib.contextmanager
def stage_clock() -> Iterator[Clock]:
    clock: Clock = {}
    with contextlib.ExitStack() as stack:
        for module, name, stage in TIMED:
            timed = _timer(getattr(module, name), stage, clock)
            stack.enter_context(patch.object(module, name, timed))
        yield clock


def run_in_process(site: Path, out: Path) -> Clock:
    """One compile through the CLI body: [wall, CPU] seconds per stage and in total."""
    with stage_clock() as clock, contextlib.redirect_stdout(io.StringIO()) as said:
        wall, cpu = _now()
        code = cli_mod.main([str(site), "--out", str(out)])
        total = [time.perf_counter() - wall, time.process_time() - cpu]
    if code != 0:
        sys.exit(f"in-process compile failed (exit {code}):\n{said.getvalue()}")
    compiled = clock.pop("compile")
    clock["emit"] = [
        c - v - k for c, v, k in zip(compiled, clock["validate"], clock["checks"], strict=True)
    ]
    clock["other"] = [t - sum(spent[i] for spent in clock.values()) for i, t in enumerate(total)]
    clock["total"] = total
    return clock


def cli_command(site: Path, out: Path) -> list[str]:
    exe = Path(sys.executable).parent / "xce-compile"
    return [str(exe) if exe.exists() else "xce-compile", str(site), "--out", str(out)]


def run_child(site: Path, out: Path) -> ChildRun:
    """The real CLI in a subprocess; its own peak RSS, not the benchmark's."""
    start = time.perf_counter()
    proc = subprocess.Popen(cli_command(site, out), stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    return ChildRun(seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, proc.returncode)


def differing_outputs(a: Path, b: Path) -> list[str]:
    """Files the two runs wrote differently (a commit in between changes the revision)."""
    names = sorted({p.name for p in a.iterdir()} | {p.name for p in b.iterdir()})
    return [
        n
        for n in names
        if not ((a / n).exists() and (b / n).exists())
        or (a / n).read_bytes() != (b / n).read_bytes()
    ]


def _mib(kib: int) -> str:
    return f"{kib / 1024:,.0f} MiB"


def report(site: Path, repeat: int) -> int:
    with tempfile.TemporaryDirectory(prefix="bench-compile-") as tmp:
        work = Path(tmp)
        runs = [run_in_process(site, work / "in-process") for _ in range(repeat)]
        best = min(runs, key=lambda r: r["total"][0])
        in_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        children = [run_child(site, work / "cli") for _ in range(repeat)]
        failed = [c for c in children if c.exit_code != 0]
        if failed:
            print(f"xce-compile failed (exit {failed[0].exit_code})", file=sys.stderr)
            return 1
        differ = differing_outputs(work / "in-process", work / "cli")
        data = (work / "cli" / "supply-map.json").read_bytes()
        entries, size = len(orjson.loads(data)["entries"]), len(data)
    print(f"site {site}: {entries:,} entries, supply-map.json {size / 2**20:,.1f} MiB")
    print(
        f"machine: {os.cpu_count()} CPUs, Python {platform.python_version()} "
        f"({platform.machine()}, {platform.system()}), load average "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    print(f"in-process (compiler.cmds.compile.main), best of {repeat} by wall time:")
    print(f"  {'stage':<10} {'wall':>7}   {'CPU':>7}")
    for stage in (*STAGES, "total"):
        if stage in best:  # "policy" runs only with a policies/ folder beside the site
            print(f"  {stage:<10} {best[stage][0]:7.3f} s {best[stage][1]:7.3f} s")
    print(f"  peak RSS of the benchmark process: {_mib(in_rss)}")
    fastest = min(children, key=lambda c: c.seconds)
    print(f"subprocess: {' '.join(cli_command(site, Path('OUT')))}")
    print(
        f"  wall {fastest.seconds:.2f} s, CPU {fastest.cpu_seconds:.2f} s (best of {repeat}; "
        f"median wall {sorted(c.seconds for c in children)[len(children) // 2]:.2f} s)"
    )
    print(f"  peak RSS {_mib(max(c.max_rss_kib for c in children))}")
    print(f"outputs of both runs identical: {'NO: ' + ', '.join(differ) if differ else 'yes'}")
    return 1 if differ else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Time xce-compile per stage and measure its memory.")
    p.add_argument("site", type=Path, help="site-config folder (e.g. from gen_site.py)")
    p.add_argument("--repeat", type=int, default=3, help="runs of each kind (default 3)")
    args = p.parse_args(argv)
    if not args.site.is_dir():
        p.error(f"no such folder: {args.site}")
    if shutil.which(cli_command(args.site, Path())[0]) is None:
        p.error("xce-compile is not installed (pip install -e .)")
    return report(args.site, max(1, args.repeat))


if __name__ == "__main__":
    sys.exit(main())
