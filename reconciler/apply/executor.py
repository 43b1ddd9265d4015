"""Runs a plan's actions in dependency order: independent ones in parallel, bounded per provider.

An action starts once everything it depends on succeeded. A failed or skipped action
skips its dependents (transitively) while the rest go on. An outcome that carries a
``stop`` problem (fenced by a newer epoch, lock lost) stops new work; what is running
finishes and what never started is reported as skipped. All bookkeeping happens on the
calling thread, so the ``settled`` callback (journal, progress) needs no locking.

The journal is written in rounds: each turn of the loop hands ``begin`` every action that
may start now, and ``begin`` marks them all in one transaction (with the outcomes held since
the last turn) before any of them is called — so its cost is per turn, not per action.
A turn starts when a call ends, after waiting for the calls that end within the time the
last round took: a round costs about that much, so outcomes that can share one do.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from compiler.core.problems import Problem
from reconciler.apply import codes
from reconciler.apply.graph import Graph
from reconciler.apply.report import Outcome, Status

MAX_WORKERS = 64
MAX_GATHER_S = 0.05  # the longest a round waits for more calls to end

Perform = Callable[[str], Outcome]  # action id -> outcome (runs on a worker thread)
# the actions about to be called (journaled in one go) -> the outcomes of those not to call
Begin = Callable[[Sequence[str]], Mapping[str, Outcome]]


class Executor:
    def __init__(self, graph: Graph, op_ids: Mapping[str, str], perform: Perform, *,
                 begin: Begin, bound: int, settled: Callable[[Outcome], None]) -> None:
        self._graph = graph
        self._op_ids = op_ids
        self._perform = perform
        self._begin = begin
        self._bound = max(1, bound)
        self._settled = settled
        self._outcomes: dict[str, Outcome] = {}
        self._waiting = {a: len(x.depends_on) for a, x in graph.actions.items()}
        self._queues: dict[str | None, deque[str]] = {}
        self._running: Counter[str | None] = Counter()
        self._upfront: Mapping[str, Outcome] = {}
        self._round_s = 0.0  # how long the last journal round took
        self.stopped: Problem | None = None

    def run(self, upfront: Mapping[str, Outcome]) -> list[Outcome]:
        """Settle ``upfront`` outcomes (journaled as done, or gated), then run the rest."""
        self._upfront = upfront
        roots = [a for a, count in self._waiting.items() if count == 0]
        for ok_first in (True, False):  # done first: their dependents must not be skipped
            for action_id, outcome in upfront.items():
                if outcome.ok is ok_first and action_id not in self._outcomes:
                    self._settle(action_id, outcome)
        for action_id in roots:
            self._enqueue(action_id)
        self._loop()
        return [self._outcomes[a] for a in self._graph.actions]

    def _loop(self) -> None:
        providers = {a.provider for a in self._graph.actions.values()}
        workers = max(1, min(MAX_WORKERS, self._bound * len(providers)))
        futures: dict[Future[Outcome], str] = {}
        failure: BaseException | None = None
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="xce-apply") as pool:
            while True:
                self._submit(pool, futures, start=self.stopped is None and failure is None)
                if not futures:
                    break
                finished = self._wait(futures)
                for future in finished:
                    action_id = futures.pop(future)
                    try:
                        outcome = future.result()
                    except BaseException as err:  # the journal failed: stop, then re-raise
                        self._running[self._graph.actions[action_id].provider] -= 1
                        failure = failure or err
                        continue
                    self._ended(action_id, outcome)
        if failure is not None:
            raise failure
        if self.stopped is not None:
            why = f"not run: the apply stopped ({self.stopped.message})"
            for action_id in self._graph.actions:
                if action_id not in self._outcomes:
                    self._record(action_id, self._skip(action_id, codes.SKIP_STOPPED, why))

    def _wait(self, futures: dict[Future[Outcome], str]) -> set[Future[Outcome]]:
        """The calls that ended: the first, and those ending within the last round's time —
        a round costs about that much, and an outcome that joins this round saves its own."""
        finished, running = wait(futures, return_when=FIRST_COMPLETED)
        if running and self._round_s > 0:
            finished, _ = wait(futures, timeout=min(self._round_s, MAX_GATHER_S))
        return finished

    def _submit(self, pool: ThreadPoolExecutor, futures: dict[Future[Outcome], str], *,
                start: bool) -> None:
        """One round (``begin``) for what may start now, then its calls; what the round
        settles instead (done meanwhile) may let more start. Without ``start`` (stopping),
        the round only writes the outcomes held."""
        while True:
            batch = self._take() if start else []
            began = time.perf_counter()
            instead = self._begin(batch)
            self._round_s = time.perf_counter() - began
            for action_id in batch:
                if action_id in instead:
                    self._ended(action_id, instead[action_id])
                else:
                    futures[pool.submit(self._perform, action_id)] = action_id
            if not instead:
                return
            start = self.stopped is None

    def _take(self) -> list[str]:
        """The queued actions that may start now: up to ``bound`` running per provider."""
        batch: list[str] = []
        for provider, queue in self._queues.items():
            while queue and self._running[provider] < self._bound:
                batch.append(queue.popleft())
                self._running[provider] += 1
        return batch

    def _ended(self, action_id: str, outcome: Outcome) -> None:
        """A started action's outcome: its provider's slot is free again."""
        self._running[self._graph.actions[action_id].provider] -= 1
        if outcome.stop is not None and self.stopped is None:
            self.stopped = outcome.stop
        self._settle(action_id, outcome)

    def _enqueue(self, action_id: str) -> None:
        if action_id in self._outcomes:
            return
        if action_id in self._upfront:
            self._settle(action_id, self._upfront[action_id])
            return
        provider = self._graph.actions[action_id].provider
        self._queues.setdefault(provider, deque()).append(action_id)

    def _record(self, action_id: str, outcome: Outcome) -> None:
        self._outcomes[action_id] = outcome
        self._settled(outcome)

    def _settle(self, action_id: str, outcome: Outcome) -> None:
        self._record(action_id, outcome)
        if outcome.ok:
            for dependent in self._graph.dependents[action_id]:
                self._waiting[dependent] -= 1
                if self._waiting[dependent] == 0:
                    self._enqueue(dependent)
        else:
            self._skip_dependents(action_id, outcome)

    def _skip_dependents(self, root: str, outcome: Outcome) -> None:
        """Skip everything that waits on ``root``, naming it; a gated skip passes on its code."""
        if outcome.status is Status.FAILED:
            code, why, hint = codes.SKIP_DEPENDENCY, f"depends on {root}, which failed", None
        else:
            code = outcome.code or codes.SKIP_DEPENDENCY
            why, hint = f"depends on {root}, which was skipped: {outcome.message}", outcome.hint
        stack = [root]
        while stack:
            for dependent in self._graph.dependents[stack.pop()]:
                if dependent not in self._outcomes:
                    self._record(dependent, self._skip(dependent, code, why, hint, cause=root))
                    stack.append(dependent)

    def _skip(self, action_id: str, code: str, message: str, hint: str | None = None, *,
              cause: str | None = None) -> Outcome:
        return Outcome(self._graph.actions[action_id], self._op_ids[action_id], Status.SKIPPED,
                       code=code, message=message,
                       hint=codes.HINTS.get(code, "") if hint is None else hint, cause=cause)
