"""Fencing epochs only grow and are never handed out twice, however many runners ask."""

from __future__ import annotations

import threading
from typing import Any

from reconciler.state import StateStore
from tests.state.targets import WORKERS, Target


def test_epochs_count_up_per_name(store: StateStore) -> None:
    assert [store.next_epoch("site/east") for _ in range(3)] == [1, 2, 3]
    assert store.next_epoch("site/west") == 1
    assert store.next_epoch("site/east") == 4


def test_epochs_survive_reopening(target: Target) -> None:
    with target.open() as store:
        store.next_epoch("site/east")
        store.next_epoch("site/east")
    with target.open() as store:
        assert store.next_epoch("site/east") == 3


def _draw(target: Target, count: int, barrier: Any, results: Any) -> None:
    with target.open() as store:
        barrier.wait(timeout=30)
        results.put([store.next_epoch("site/east") for _ in range(count)])


def test_concurrent_processes_get_unique_epochs(target: Target) -> None:
    processes, count = 4, 40
    target.open().close()
    barrier, results = WORKERS.Barrier(processes), WORKERS.Queue()
    workers = [
        WORKERS.Process(target=_draw, args=(target, count, barrier, results))
        for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    drawn = [results.get(timeout=60) for _ in range(processes)]
    for worker in workers:
        worker.join(timeout=30)
        assert worker.exitcode == 0
    for values in drawn:
        assert values == sorted(values)  # monotonic as each runner sees it
    assert sorted(v for values in drawn for v in values) == list(range(1, processes * count + 1))


def test_concurrent_threads_with_own_connections_get_unique_epochs(target: Target) -> None:
    threads, count = 4, 25
    stores = [target.open() for _ in range(threads)]
    drawn: list[list[int]] = [[] for _ in range(threads)]
    barrier = threading.Barrier(threads)

    def draw(i: int) -> None:
        barrier.wait(timeout=30)
        drawn[i].extend(stores[i].next_epoch("site/east") for _ in range(count))

    workers = [threading.Thread(target=draw, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    for store in stores:
        store.close()
    assert sorted(v for values in drawn for v in values) == list(range(1, threads * count + 1))
