"""How an apply shows progress: a rich bar on a terminal, one plain line per action in CI.

Both get every settled action from the executor's thread; failures are printed as they
happen, so a long apply never hides a problem until its end.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Protocol, TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from reconciler.apply.report import Outcome, Status, waiting_text


class Sink(Protocol):
    def start(self, total: int) -> None: ...

    def update(self, outcome: Outcome) -> None: ...

    def close(self) -> None: ...


def describe(outcome: Outcome) -> str:
    """``create volume/shared (shared-fs)`` plus why, for a failed or skipped action."""
    action = outcome.action
    text = f"{action.verb} {action.entry} ({action.provider or 'no provider'})"
    if outcome.status is Status.FAILED or outcome.status is Status.SKIPPED:
        text += f": {outcome.code} {outcome.message}"
    if outcome.warnings:
        text += " — warning: " + "; ".join(outcome.warnings)
    return text


class Silent:
    def start(self, total: int) -> None:
        """Nothing to show."""

    def update(self, outcome: Outcome) -> None:
        """Nothing to show."""

    def close(self) -> None:
        """Nothing to show."""


class PlainLines:
    """``[  12/340] done          create volume-dir/shared/alice (shared-fs) 0.02s``.

    Actions an earlier run of the plan did are one line per run of them, counted per kind
    (resuming a 3,296-action plan near its end does not print 3,000 lines of nothing); the
    actions skipped because one failed are one line with it (the executor settles them in
    a row), not one each."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._total = 0
        self._count = 0
        self._done_before: Counter[str] = Counter()  # kind → already-done actions not shown
        self._waiting: list[Outcome] = []  # skipped, waiting on one cause: not shown yet

    def start(self, total: int) -> None:
        self._total = total

    def update(self, outcome: Outcome) -> None:
        if outcome.status is Status.ALREADY_DONE:
            self._count += 1
            self._done_before[outcome.action.kind] += 1
            return
        if outcome.status is Status.SKIPPED and outcome.cause is not None:
            if self._waiting and self._waiting[0].cause != outcome.cause:
                self._say_waiting()
            self._count += 1
            self._waiting.append(outcome)
            return
        self._say_waiting()
        self._say_done_before()
        self._count += 1
        took = f" {outcome.seconds:.2f}s" if outcome.status is Status.DONE else ""
        self._line(outcome.status.value, f"{describe(outcome)}{took}")

    def _say_done_before(self) -> None:
        if self._done_before:
            kinds = ", ".join(f"{n:,} {kind}" for kind, n in sorted(self._done_before.items()))
            count = sum(self._done_before.values())
            self._line(Status.ALREADY_DONE.value, f"{count:,} action{'s' * (count != 1)} done "
                       f"by an earlier run of this plan ({kinds})")
            self._done_before.clear()

    def _say_waiting(self) -> None:
        waiting, self._waiting = self._waiting, []
        if len(waiting) == 1:
            self._line(Status.SKIPPED.value, describe(waiting[0]))
        elif waiting:
            first = waiting[0]
            self._line(Status.SKIPPED.value, f"{len(waiting):,} actions: {first.code} "
                       f"{first.message}: {waiting_text(waiting)}")

    def _line(self, status: str, text: str) -> None:
        width = len(str(self._total))
        self._stream.write(f"[{self._count:>{width}}/{self._total}] {status:<13}{text}\n")
        self._stream.flush()

    def close(self) -> None:
        self._say_waiting()
        self._say_done_before()
        self._stream.flush()


class Bar:
    """A rich progress bar; failures are printed above it as they happen."""

    def __init__(self, stream: TextIO) -> None:
        self._progress = Progress(TextColumn("applying"), BarColumn(), MofNCompleteColumn(),
                                  TextColumn("{task.fields[failed]} failed"),
                                  TimeElapsedColumn(), console=Console(file=stream),
                                  transient=False)
        self._task = self._progress.add_task("apply", total=0, failed=0)
        self._failed = 0

    def start(self, total: int) -> None:
        self._progress.update(self._task, total=total)
        self._progress.start()

    def update(self, outcome: Outcome) -> None:
        if outcome.status is Status.FAILED:
            self._failed += 1
            # Text, not markup: entry ids may contain brackets
            self._progress.console.print(Text.assemble(("failed ", "red"), describe(outcome)))
        self._progress.update(self._task, advance=1, failed=self._failed)

    def close(self) -> None:
        self._progress.stop()


def sink_for(stream: TextIO) -> Sink:
    """A bar on an interactive terminal; plain lines in CI or when output is not a TTY."""
    interactive = stream.isatty() and os.environ.get("CI", "").lower() not in ("true", "1")
    return Bar(stream) if interactive else PlainLines(stream)
