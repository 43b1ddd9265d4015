"""What every stress suite shares: the size knob, the seed, the figures and the command line.

A suite is a function ``run(count, seed, root) -> Figures``: ``count`` is its size (the
suite derives the sizes of its parts from it), ``seed`` makes every random choice
repeatable, ``root`` is a scratch folder. It never raises on a finding: each finding is a
line in ``Figures.failures`` that names the seed and the case, so a run at full size reports
all of them and the short mode (tests/stress/test_stress_suites.py) fails on the first list.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

SCALE_ENV = "XCE_STRESS_SCALE"  # multiplies every short-mode count (pytest)
SEED_ENV = "XCE_STRESS_SEED"  # replaces the fixed short-mode seed
SHORT_SEED = 20  # issue 20: the short mode is the same run every time unless told


def short_count(count: int) -> int:
    """A short-mode count, scaled by ``XCE_STRESS_SCALE`` (at least 1)."""
    return max(1, round(count * float(os.environ.get(SCALE_ENV) or 1)))


def short_seed() -> int:
    return int(os.environ.get(SEED_ENV) or SHORT_SEED)


@dataclass
class Figures:
    """What a suite counted, and every finding (empty when all held)."""

    suite: str
    seed: int
    counts: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0
    cpu: float = 0.0
    max_rss_mib: float = 0.0

    def fail(self, case: str, what: str) -> None:
        self.counts["findings"] += 1
        self.failures.append(f"[{self.suite} seed={self.seed}] {case}: {what}")

    def lines(self) -> list[str]:
        head = (f"{self.suite}: seed {self.seed}, {self.seconds:.0f} s wall, {self.cpu:.0f} s "
                f"CPU, max RSS {self.max_rss_mib:.0f} MiB")
        body = [f"  {name:<40} {value:>8,}" for name, value in sorted(self.counts.items())]
        return [head, *body, *(f"  FINDING {f}" for f in self.failures)]

    def check(self) -> None:
        """For the short mode: every finding, with the seed that repeats it."""
        assert not self.failures, "\n".join(self.lines())


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


@contextmanager
def measured(figures: Figures) -> Iterator[Figures]:
    """Wall time, CPU (children included) and peak memory of the block, into ``figures``."""
    start, cpu = time.monotonic(), _cpu()
    try:
        yield figures
    finally:
        figures.seconds += time.monotonic() - start
        figures.cpu += _cpu() - cpu
        peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                   resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
        figures.max_rss_mib = peak / 1024


Suite = Callable[[int, int, Path], Figures]


def rng_for(seed: int, *case: object) -> random.Random:
    """One generator per case, so a case repeats alone from the seed and its name."""
    return random.Random("/".join(map(str, (seed, *case))))


def main(suite: Suite, default_count: int, description: str) -> None:
    """``python -m tests.stress.<suite> [--count N] [--seed S] [--keep DIR]``."""
    name = sys.modules[suite.__module__].__spec__
    prog = f"python -m {name.name}" if name is not None else None
    ap = argparse.ArgumentParser(prog=prog, description=description,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=default_count,
                    help=f"size of the run (default {default_count}, the full size)")
    ap.add_argument("--seed", type=int, default=None, help="default: a random one, printed")
    ap.add_argument("--keep", type=Path, default=None, help="scratch folder to keep")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    print(f"{ap.prog}: --count {args.count} --seed {seed}", flush=True)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        figures = suite(args.count, seed, args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="xce-stress-") as tmp:
            figures = suite(args.count, seed, Path(tmp))
    print("\n".join(figures.lines()), flush=True)
    sys.exit(1 if figures.failures else 0)
