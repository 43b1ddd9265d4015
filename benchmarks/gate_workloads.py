"""The gate's workloads and their floors, timed in CPU seconds, each beside its floor.

A workload is the product's own command body run in this process (``xce-compile``'s and
``xce-plan``'s ``main``, stdout to /dev/null), so interpreter start-up and imports do not
count. Its floor is the least work of the same size:

- ``decode`` (the plans' floor): reading the desired map and the 1 %-drift live map and
  decoding both with ``compiler.contract.supply_map.decode_map``, as loading them for a plan
  does. One floor for every plan, so the plans' ratios compare with each other too (issue 23's
  "100 % drift ≤ 3× the 1 % plan" is the quotient of two of them); if the decoder gets faster,
  the floor follows it and the plans' ratios hold.
- ``orjson`` (the decoder's own floor): reading the same two files and ``orjson.loads`` of
  each, which builds plain dicts and lists and nothing of the product's. The ``decode``
  floor is itself a workload against it, so a slower decoder, which would make every plan
  look better against ``decode``, fails the gate there.
- ``yaml+decode`` (the compile's floor): parsing the site's YAML files with ruamel's safe
  loader on libyaml's C parser (the parser the compiler uses, without its checks) and
  decoding the map the compile writes: reading what a compile reads and building what it
  builds, in the cheapest way there is.

Time is ``time.process_time`` of this process, the collector paused (as the commands pause it)
after a full collection outside the timing. Each round times, for each workload, its floor
and then the workload right after it; a pair's ratio cancels the load the machine had at
that moment, and the median over the rounds drops the pairs that load changed in between.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson
from ruamel.yaml import YAML

from benchmarks.gate_figures import Measured
from benchmarks.gate_inputs import AS_OF, Inputs
from compiler.cmds.compile import main as compile_main
from compiler.contract.supply_map import decode_map
from compiler.core.gc_pause import gc_paused
from reconciler.cmds.plan import main as plan_main

Run = Callable[[], None]
PLANS = {"plan-1pct": "1pct", "plan-unchanged": "unchanged", "plan-100pct": "100pct",
         "plan-empty": "empty"}  # workload -> live map


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    floor: str
    run: Run


class WorkloadFailed(Exception):
    """A command body did not end as a benchmark run must (its exit code and stderr)."""


def _command(main: Callable[[list[str]], int], argv: list[str], ok: tuple[int, ...]) -> Run:
    def run() -> None:
        with (open(os.devnull, "w") as null, contextlib.redirect_stdout(null),
              contextlib.redirect_stderr(io.StringIO()) as said):
            code = main(argv)
        if code not in ok:
            raise WorkloadFailed(f"{main.__module__} {' '.join(argv)} exited {code}:\n"
                                 f"{said.getvalue()}")
    return run


def _decode(files: Sequence[Path]) -> Run:
    def run() -> None:
        for f in files:
            if decode_map(f.read_bytes()) is None:
                raise WorkloadFailed(f"decode_map takes the general path for {f}")
    return run


def _orjson(files: Sequence[Path]) -> Run:
    def run() -> None:
        for f in files:
            orjson.loads(f.read_bytes())
    return run


def _yaml_and_decode(site: Path, desired: Path) -> Run:
    texts = sorted(site.rglob("*.yaml"))

    def run() -> None:
        loader = YAML(typ="safe")  # libyaml's C parser when ruamel.yaml.clib is there
        for path in texts:
            loader.load(path.read_text(encoding="utf-8"))
        _decode([desired])()
    return run


def floors(inputs: Inputs) -> dict[str, Run]:
    maps = [inputs.desired, inputs.lives["1pct"]]
    return {"decode": _decode(maps), "orjson": _orjson(maps),
            "yaml+decode": _yaml_and_decode(inputs.site, inputs.desired)}


def workloads(inputs: Inputs) -> list[Workload]:
    """Compile, the plans' floor itself, then the plans of each live map; ``--force`` so that
    a guard's threshold never stops a plan half-way, ``--as-of`` the live maps' time so the
    plans never follow the clock."""
    compile_run = _command(compile_main, [str(inputs.site), "--out", str(inputs.out)], (0,))
    plans = [
        Workload(name, "decode", _command(plan_main, [
            "--desired", str(inputs.desired), "--live", str(inputs.lives[live]),
            "--format", "json", "--workdir", str(inputs.workdir), "--force", "--as-of", AS_OF,
        ], (0, 2)))
        for name, live in PLANS.items()
    ]
    decode = Workload("decode", "orjson", floors(inputs)["decode"])
    return [Workload("compile", "yaml+decode", compile_run), decode, *plans]


def cpu_seconds(run: Run) -> float:
    """CPU seconds of one run, after a full collection, with the collector paused."""
    gc.collect()
    with gc_paused():
        start = time.process_time()
        run()
        return time.process_time() - start


def _progress(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()


def measure(inputs: Inputs, rounds: int) -> list[Measured]:
    """Every workload and its floor, in pairs, ``rounds`` times, after one warm-up of each."""
    floor_of, work = floors(inputs), workloads(inputs)
    first_plan = next(w.run for w in work if w.name in PLANS)
    for run in (*floor_of.values(), first_plan):  # first calls: caches, lazy imports
        run()
    pairs: dict[str, list[tuple[float, float]]] = {w.name: [] for w in work}
    for n in range(rounds):
        _progress(f"round {n + 1}/{rounds}:")
        for w in work:
            pairs[w.name].append((cpu_seconds(floor_of[w.floor]), cpu_seconds(w.run)))
            _progress(f" {w.name}")
        _progress("\n")
    return [
        Measured(w.name, w.floor, statistics.median(c for _, c in pairs[w.name]),
                 statistics.median(f for f, _ in pairs[w.name]),
                 statistics.median(c / f for f, c in pairs[w.name]))
        for w in work
    ]
