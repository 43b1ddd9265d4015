"""Benchmark of the apply's own cost: N volume-dir creates on the built-in directory provider.

Run: ``.venv/bin/python benchmarks/bench_apply.py [--actions N] [--state URL] [--parallelism P]``
(``--state`` defaults to a fresh SQLite file; a ``postgresql://`` URL gets a schema of its
own, dropped at the end; ``--pg`` takes the URL from XCE_TEST_PG_URL). The site is one
volume and N user directories (each waiting for the volume), planned in memory and applied
in this process as a saved plan, so the figure is the real apply: lock, epoch, recovery,
the stale check, the journal, the executor and the report.

It prints the providers' own cost — the same creates sent one by one straight to a fresh
provider, no journal (CPU and wall) — the apply's total, and the difference per action, in
process CPU (all threads) and wall: the apply's own cost. The CPU a provider spends on its
calls varies from run to run (its files, the shared machine), so each run also times the
provider's side of every call (the built-in transport runs it on a thread of its own) and
the CPU difference leaves out what the calls cost in that very run: (apply − its calls) −
(providers alone − their calls). Journaled actions per second is the actions over that
difference. ``--repeat R`` keeps the best of R runs of each.

``--free`` answers every change call at once with success, without the provider (its
reads still reach it): the apply's wall is then its own (lock, journal rounds, executor),
so the whole apply's actions per wall second are the most the apply can carry, and the
best of R is the fastest wall. Each run also counts the journal's rounds (transactions).
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import orjson
import psycopg

from compiler.contract.settings import Settings
from compiler.contract.supply_map import Entry, SupplyMap
from reconciler.apply import ApplyOptions, apply
from reconciler.pipeline import gather, load_desired, plan_for
from reconciler.plan.file import SavedPlan
from reconciler.protocol import Reply, Request
from reconciler.providers.registry import open_provider
from reconciler.state import open_store
from reconciler.state.sql_store import SqlStore
from reconciler.transports import BuiltinTransport

OWNER = "site/bench"
PROVIDER = "fs"
CHANGES = frozenset({"create", "update", "delete"})


@contextmanager
def provider_cpu() -> Iterator[list[float]]:
    """The thread CPU of the provider's side of each built-in call, summed in ``[0]``."""
    total, lock, run = [0.0], threading.Lock(), BuiltinTransport._run

    def timed(self: BuiltinTransport, call: object) -> None:
        started = time.thread_time()
        try:
            run(self, call)  # type: ignore[arg-type]
        finally:
            with lock:
                total[0] += time.thread_time() - started

    BuiltinTransport._run = timed  # type: ignore[method-assign]
    try:
        yield total
    finally:
        BuiltinTransport._run = run  # type: ignore[method-assign]


@contextmanager
def free_changes() -> Iterator[None]:
    """Every change call answered at once with success, the provider untouched (reads still
    reach it): the apply's wall is then its own — lock, journal, executor — alone."""
    handle = BuiltinTransport._handle

    def free(self: BuiltinTransport, request: Request) -> Reply:
        return Reply.success({}) if request.verb in CHANGES else handle(self, request)

    BuiltinTransport._handle = free  # type: ignore[method-assign]
    try:
        yield
    finally:
        BuiltinTransport._handle = handle  # type: ignore[method-assign]


def entries(n: int) -> list[Entry]:
    out = [Entry("volume/home", "volume", "available", "config", PROVIDER,
                 spec={"path": "/home", "mode": "0755"}, owner=OWNER)]
    out += [Entry(f"volume-dir/home/u{i:06d}", "volume-dir", "available", "config", PROVIDER,
                  spec={"mode": "0700", "owner": "nobody"}, owner=OWNER) for i in range(n)]
    return out


def write_site(root: Path, n: int) -> Path:
    settings = Settings({"owner": OWNER, "safety": {"min_entries": 1, "max_changes": n + 10}})
    supply = SupplyMap({e.id: e for e in entries(n)}, site="bench", owner=OWNER,
                       revision="0123456789abcdef", settings=settings)
    desired = root / "build" / "supply-map.json"
    desired.parent.mkdir(parents=True)
    desired.write_bytes(supply.dumps())
    bindings = {"providers": {PROVIDER: {"kind": "directory", "params": {}}}}
    (desired.parent / "bindings.json").write_bytes(orjson.dumps(bindings))
    return desired


def providers_alone(root: Path, n: int) -> tuple[float, float, float]:
    """CPU, wall and the calls' own CPU of the same creates sent straight to a fresh
    provider, one by one: no journal, no apply."""
    transport = open_provider(PROVIDER, {"kind": "directory", "params": {}}, root)
    try:
        requests = [Request("create", f"op{i}", 1, OWNER, {"entry": e.to_json()})
                    for i, e in enumerate(entries(n))]
        with provider_cpu() as calls:
            cpu, wall = time.process_time(), time.perf_counter()
            for request in requests:
                reply = transport.call(request)
                assert reply.ok, reply.to_json()
            return time.process_time() - cpu, time.perf_counter() - wall, calls[0]
    finally:
        transport.close()


def pg_schema_url(base: str) -> tuple[str, str]:
    schema = f"xce_bench_{secrets.token_hex(4)}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    option = quote(f"-csearch_path={schema}", safe="")
    return f"{base}{'&' if '?' in base else '?'}options={option}", schema


@contextmanager
def rounds_counted() -> Iterator[list[int]]:
    """How many journal rounds (one transaction each) the apply wrote, in ``[0]``."""
    count, journal_round = [0], SqlStore.journal_round

    def counted(self: SqlStore, /, *args: Any) -> frozenset[str]:
        count[0] += 1
        return journal_round(self, *args)

    SqlStore.journal_round = counted  # type: ignore[method-assign,assignment]
    try:
        yield count
    finally:
        SqlStore.journal_round = journal_round  # type: ignore[method-assign]


def run_apply(root: Path, url: str, n: int, parallelism: int) -> tuple[float, ...]:
    """CPU, wall, the provider calls' own CPU and the journal rounds of the apply of N
    creates."""
    desired = load_desired(None, write_site(root, n))
    workdir = root / ".xce"
    plan = plan_for(desired, gather(desired, workdir), now=time.time(), force=True)
    assert len(plan.actions) == n + 1, len(plan.actions)
    with (open_store(url, root / "unused.db", env={}) as store, provider_cpu() as calls,
          rounds_counted() as rounds):
        cpu, wall = time.process_time(), time.perf_counter()
        report = apply(desired, SavedPlan(plan, False), store, workdir,
                       ApplyOptions(parallelism=parallelism))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    assert report.result == "applied", [o.message for o in report.outcomes if not o.ok]
    return cpu, wall, calls[0], rounds[0]


Round = tuple[float, ...]


def measure(root: Path, args: argparse.Namespace) -> Round:
    """One round in fresh folders and a fresh store: the providers alone, then the apply."""
    alone = providers_alone(root / "alone", args.actions)
    base = os.environ.get("XCE_TEST_PG_URL", "") if args.pg else ""
    url, schema = pg_schema_url(base) if base else (args.state or str(root / "state.db"), "")
    try:
        applied = run_apply(root / "site", url, args.actions, args.parallelism)
    finally:
        if schema:
            with psycopg.connect(base, autocommit=True) as admin:
                admin.execute(f"DROP SCHEMA {schema} CASCADE")
    return (*alone, *applied)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actions", type=int, default=5000, help="volume-dirs to create")
    parser.add_argument("--parallelism", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--state", help="a store URL (default: a fresh SQLite file)")
    parser.add_argument("--pg", action="store_true", help="PostgreSQL at $XCE_TEST_PG_URL")
    parser.add_argument("--free", action="store_true",
                        help="change calls answer at once: the wall is the apply's own")
    args = parser.parse_args()
    rounds: list[Round] = []
    for _ in range(args.repeat):
        with (tempfile.TemporaryDirectory(prefix="bench-apply-") as tmp,
              free_changes() if args.free else nullcontext()):
            rounds.append(measure(Path(tmp), args))
    alone_cpu, alone_wall, alone_calls, cpu, wall, calls, journal_rounds = min(
        rounds, key=lambda r: r[4] if args.free else (r[3] - r[5]) - (r[0] - r[2]))
    actions = args.actions + 1
    own_cpu = (cpu - calls) - (alone_cpu - alone_calls)
    store = "postgresql" if args.pg or (args.state or "").startswith("postgres") else "sqlite"
    print(f"store: {store}; {actions} actions, parallelism {args.parallelism}, "
          f"best of {args.repeat}")
    print(f"providers alone (no journal): cpu {alone_cpu:.3f} s (their calls {alone_calls:.3f}"
          f" s), wall {alone_wall:.3f} s: {alone_cpu / actions * 1e3:.3f} ms CPU per action")
    print(f"apply total:                  cpu {cpu:.3f} s (the provider calls {calls:.3f} s), "
          f"wall {wall:.3f} s")
    print(f"beyond the providers, per action: cpu {own_cpu / actions * 1e3:.3f} ms "
          f"(apply CPU less providers-alone CPU: {(cpu - alone_cpu) / actions * 1e3:.3f} ms), "
          f"wall {(wall - alone_wall) / actions * 1e3:.3f} ms")
    print(f"journaled actions per second (apply's own CPU): {actions / own_cpu:,.0f}; "
          f"the whole apply, wall: {actions / wall:,.0f}")
    print(f"journal rounds: {journal_rounds:,.0f} ({actions / journal_rounds:.1f} actions each)")


if __name__ == "__main__":
    main()
