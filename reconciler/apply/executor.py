"""Runs a plan's actions in dependency order: independent ones in parallel, bounded per provider.

An action starts once everything it depends on succeeded. A failed or skipped action
skips its dependents (transitively) while the rest go on. An outcome that carries a
``stop`` problem (fenced by a newer epoch, lock lost) stops new work; what is running
finishes and what never started is reported as skipped. All bookkeeping happens on the
calling thread, so the ``settled`` callback (journal, progress) needs no locking.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from compiler.core.problems import Problem
from reconciler.apply import codes
from reconciler.apply.graph import Graph
from reconciler.apply.report import Outcome, Status

MAX_WORKERS = 64

Perform = Callable[[str], Outcome]  # action id -> outcome (runs on a worker thread)


class Executor:
    def __init__(self, graph: Graph, op_ids: Mapping[str, str], perform: Perform, *,
                 bound: int, settled: Callable[[Outcome], None]) -> None:
        self._graph = graph
        self._op_ids = op_ids
        self._perform = perform
        self._bound = max(1, bound)
        self._settled = settled
        self._outcomes: dict[str, Outcome] = {}
        self._waiting = {a: len(x.depends_on) for a, x in graph.actions.items()}
        self._queues: dict[str | None, deque[str]] = {}
        self._running: Counter[str | None] = Counter()
        self._upfront: Mapping[str, Outcome] = {}
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
                if self.stopped is None and failure is None:
                    self._submit(pool, futures)
                if not futures:
                    break
                finished, _ = wait(futures, return_when=FIRST_COMPLETED)
                for future in finished:
                    action_id = futures.pop(future)
                    self._running[self._graph.actions[action_id].provider] -= 1
                    try:
                        outcome = future.result()
                    except BaseException as err:  # the journal failed: stop, then re-raise
                        failure = failure or err
                        continue
                    if outcome.stop is not None and self.stopped is None:
                        self.stopped = outcome.stop
                    self._settle(action_id, outcome)
        if failure is not None:
            raise failure
        if self.stopped is not None:
            why = f"not run: the apply stopped ({self.stopped.message})"
            for action_id in self._graph.actions:
                if action_id not in self._outcomes:
                    self._record(action_id, self._skip(action_id, codes.SKIP_STOPPED, why))

    def _submit(self, pool: ThreadPoolExecutor, futures: dict[Future[Outcome], str]) -> None:
        for provider, queue in self._queues.items():
            while queue and self._running[provider] < self._bound:
                action_id = queue.popleft()
                self._running[provider] += 1
                futures[pool.submit(self._perform, action_id)] = action_id

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
