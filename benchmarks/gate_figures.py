"""``benchmarks/figures.json``: the ratios recorded in the repository, and the gate's verdict.

The figures are ratios to a floor measured in the same run, not seconds: the shared 2-core
machine runs the same code up to twice as slow on a busy day, and a ratio keeps only what the
code changed. A ratio more than ``TOLERANCE`` above the recorded one fails the gate; one more
than ``TOLERANCE`` below it passes and says so, since recording it again keeps the gain.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

TOLERANCE = 0.15
WORSE, BETTER, SAME = "worse", "better", "same"


@dataclass(frozen=True, slots=True)
class Measured:
    """One workload of one run: medians over the rounds (the ratio is the median of the
    rounds' ratios, each of a workload run and the floor run just before it)."""

    name: str
    floor: str
    cpu: float
    floor_cpu: float
    ratio: float


@dataclass(frozen=True, slots=True)
class Figures:
    """What ``--record`` wrote: per workload its ratio (and, to read, its CPU seconds), and
    where and when it was measured."""

    hosts: int
    entries: int
    rounds: int
    machine: str
    date: str
    commit: str
    workloads: dict[str, Measured]

    def to_json(self) -> dict[str, Any]:
        return {
            "hosts": self.hosts, "entries": self.entries, "rounds": self.rounds,
            "machine": self.machine, "date": self.date, "commit": self.commit,
            "workloads": {m.name: {"ratio": round(m.ratio, 3), "cpu_s": round(m.cpu, 3),
                                   "floor": m.floor, "floor_cpu_s": round(m.floor_cpu, 3)}
                          for m in self.workloads.values()},
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Figures:
        workloads = {name: Measured(name, w["floor"], w["cpu_s"], w["floor_cpu_s"], w["ratio"])
                     for name, w in doc["workloads"].items()}
        return cls(doc["hosts"], doc["entries"], doc["rounds"], doc["machine"], doc["date"],
                   doc["commit"], workloads)


class GateError(Exception):
    """The run cannot be judged against the figures (none, of another size, a workload
    missing): exit 2, not a regression."""


def load(path: Path) -> Figures:
    try:
        return Figures.from_json(orjson.loads(path.read_bytes()))
    except FileNotFoundError:
        raise GateError(f"no recorded figures at {path}: record them with "
                        "scripts/bench.sh --record") from None
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, AttributeError) as err:
        raise GateError(f"cannot read the figures in {path}: {err!r}") from None


def save(path: Path, figures: Figures) -> None:
    path.write_bytes(orjson.dumps(figures.to_json(), option=orjson.OPT_INDENT_2) + b"\n")


@dataclass(frozen=True, slots=True)
class Verdict:
    measured: Measured
    recorded: float

    @property
    def change(self) -> float:
        """How much worse than recorded (negative: better), as a fraction."""
        return self.measured.ratio / self.recorded - 1

    @property
    def status(self) -> str:
        if self.change > TOLERANCE:
            return WORSE
        return BETTER if self.change < -TOLERANCE else SAME

    def why(self) -> str:
        """One line naming the workload, its ratio and the recorded one."""
        m = self.measured
        said = {WORSE: f"more than {TOLERANCE:.0%} worse: the gate fails",
                BETTER: "better: record it (scripts/bench.sh --record) to keep the gain",
                SAME: f"within {TOLERANCE:.0%}"}[self.status]
        return (f"{m.name}: ratio {m.ratio:.2f} to its floor ({m.floor}), recorded "
                f"{self.recorded:.2f} ({self.change:+.1%}), {said}")


def check_size(figures: Figures, hosts: int) -> None:
    """GateError unless the figures were recorded at ``hosts`` (ratios depend on size)."""
    if figures.hosts != hosts:
        raise GateError(f"the figures were recorded at {figures.hosts:,} hosts, this run has "
                        f"{hosts:,}: run at --hosts {figures.hosts} (ratios depend on size)")


def compare(measured: list[Measured], figures: Figures, hosts: int) -> list[Verdict]:
    """Each measured workload against its recorded ratio; GateError when the figures were
    recorded at another size or lack a workload."""
    check_size(figures, hosts)
    missing = [m.name for m in measured if m.name not in figures.workloads]
    if missing:
        raise GateError(f"no recorded figure for {', '.join(missing)}: record them with "
                        "scripts/bench.sh --record")
    return [Verdict(m, figures.workloads[m.name].ratio) for m in measured]
