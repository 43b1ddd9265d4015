"""Runs and the apply journal: every provider call, recorded before it is made.

An op is journaled ``pending``, marked ``running`` before its call and closed by the call's
outcome, so a resumed apply skips what is done and a crashed one leaves its calls in doubt
until recovery (docs/apply.md). Op ids are idempotency keys: an op keeps one row whichever
run sends it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import orjson

from compiler.core.canonical import dumps_compact
from reconciler.state.connection import Connection, reconnecting
from reconciler.state.dialect import Row, text_array
from reconciler.state.store import JournalEntry, OpOutcome, OpStatus, PlannedOp, Run, RunStatus
from reconciler.state.times import to_maybe_time, to_time

_RUN_COLUMNS = "run_id, plan_digest, holder, started, finished, status"
_JOURNAL_COLUMNS = (
    "op_id, run_id, action, entry_id, provider, status, attempts, error, started, finished, result"
)
_JOURNAL_J = ", ".join(f"j.{c.strip()}" for c in _JOURNAL_COLUMNS.split(","))
# a string prefix test both databases run alike (LIKE would treat '_' and '%' in it as patterns)
_STARTS_WITH = "substr({column}, 1, ?) = ?"
# which rows an outcome may change besides 'done' ones (never changed): see journal_finish
_FINISH_WHEN = {
    OpStatus.DONE: "",
    OpStatus.FAILED: " AND run_id = ?",
    OpStatus.SKIPPED: " AND run_id = ? AND status <> 'running'",
    OpStatus.RUNNING: " AND run_id = ? AND status = 'running'",
}


# an op's mark as running before its call (attempts + 1); a done op is left unchanged
_MARK_RUNNING = (
    "ON CONFLICT (op_id) DO UPDATE SET run_id = excluded.run_id, status = excluded.status, "
    "attempts = journal.attempts + 1, started = excluded.started, finished = NULL, "
    "error = NULL, result = NULL WHERE journal.status <> 'done' RETURNING op_id"
)
# a round in one statement (Dialect.writable_with), so one round trip and no BEGIN/COMMIT:
# the outcomes (``_FINISH_WHEN`` as one condition), then the marks; arrays keep its text
# fixed, so the driver prepares it. Both read one clock; they touch different rows.
_ROUND = (
    "WITH clock AS (SELECT {clock} AS now), "
    "finished AS (UPDATE journal SET status = v.status, error = v.error, result = v.result, "
    "finished = (SELECT now FROM clock) "
    "FROM unnest(?::text[], ?::text[], ?::text[], ?::text[]) AS v(op_id, status, error, result) "
    "WHERE journal.op_id = v.op_id AND journal.status <> 'done' AND (v.status = 'done' OR "
    "journal.run_id = ? AND CASE v.status WHEN 'skipped' THEN journal.status <> 'running' "
    "WHEN 'running' THEN journal.status = 'running' ELSE true END)), "
    "started AS (INSERT INTO journal (op_id, run_id, action, entry_id, provider, status, "
    "attempts, started) SELECT s.op_id, ?, s.action, s.entry_id, s.provider, 'running', 1, "
    "(SELECT now FROM clock) FROM unnest(?::text[], ?::text[], ?::text[], ?::text[]) "
    f"AS s(op_id, action, entry_id, provider) {_MARK_RUNNING}) "
    "SELECT op_id FROM started"
)
_ADD_COLUMNS = "op_id, run_id, action, entry_id, provider, status"
# journal_add: a done op keeps its row, one in doubt stays running
_ADD_KEEPS = (
    "ON CONFLICT (op_id) DO UPDATE SET run_id = excluded.run_id, status = CASE journal.status "
    "WHEN 'running' THEN 'running' ELSE excluded.status END WHERE journal.status <> 'done'"
)
_CHUNK = 500  # rows per statement: well under either database's limit of parameters
_ARRAY_CHUNK = 10_000  # rows per statement that binds them as arrays (no such limit)
T = TypeVar("T")


def _chunks(items: Sequence[T], size: int = _CHUNK) -> Iterator[Sequence[T]]:
    for at in range(0, len(items), size):
        yield items[at : at + size]


def _columns(ops: Sequence[PlannedOp]) -> list[str]:
    """The ops as four arrays to bind: op_id, action, entry_id, provider."""
    return [text_array(op.op_id for op in ops), text_array(op.action for op in ops),
            text_array(op.entry_id for op in ops), text_array(op.provider for op in ops)]


def _rows(row: str, count: int) -> str:
    return ", ".join([row] * count)


def _check_finish(outcomes: Iterable[OpOutcome]) -> None:
    for outcome in outcomes:
        if outcome.status not in _FINISH_WHEN:
            raise ValueError(f"journal_finish cannot record {outcome.status.value!r}")


class Journal(Connection):
    """Runs and the operation journal, over the store's connection."""

    # -- runs --------------------------------------------------------------------------

    @reconnecting
    def start_run(self, run_id: str, plan_digest: str, holder: str) -> Run:
        with self._write() as now:
            self._execute(  # run ids are unique: a conflict is this very insert run again
                f"INSERT INTO runs ({_RUN_COLUMNS}) VALUES (?, ?, ?, ?, NULL, ?) "
                "ON CONFLICT (run_id) DO NOTHING",
                run_id,
                plan_digest,
                holder,
                now,
                RunStatus.RUNNING.value,
            )
            return self._run(run_id)

    @reconnecting
    def finish_run(self, run_id: str, status: RunStatus) -> Run:
        """Close the run; the ops it journaled but never sent (``pending``, no attempt) are
        dropped: nobody will send them under this run, and a rerun of the same plan journals
        them again from the plan."""
        with self._write() as now:
            if not self._execute(
                "UPDATE runs SET status = ?, finished = ? WHERE run_id = ?",
                status.value,
                now,
                run_id,
            ):
                raise LookupError(f"no run {run_id!r} in the state store")
            self._execute(
                "DELETE FROM journal WHERE run_id = ? AND status = 'pending' AND attempts = 0",
                run_id,
            )
            return self._run(run_id)

    @reconnecting
    def get_run(self, run_id: str) -> Run | None:
        with self._transaction(write=False):
            rows = self._query(f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?", run_id)
        return _to_run(rows[0]) if rows else None

    @reconnecting
    def runs(
        self, plan_digest: str | None = None, limit: int = 20, *, prefix: str | None = None
    ) -> list[Run]:
        """Most recent runs first, optionally only those of one plan, or whose run_id
        starts with ``prefix`` (one site's, in a store that several sites share)."""
        where: list[str] = []
        params: list[Any] = []
        if plan_digest:
            where.append("plan_digest = ?")
            params.append(plan_digest)
        if prefix:
            where.append(_STARTS_WITH.format(column="run_id"))
            params += [len(prefix), prefix]
        condition = f"WHERE {' AND '.join(where)} " if where else ""
        with self._transaction(write=False):
            rows = self._query(
                f"SELECT {_RUN_COLUMNS} FROM runs {condition}ORDER BY started DESC, run_id LIMIT ?",
                *params,
                limit,
            )
        return [_to_run(row) for row in rows]

    def _run(self, run_id: str) -> Run:
        return _to_run(self._query(f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?", run_id)[0])

    # -- the journal -------------------------------------------------------------------

    @reconnecting
    def journal_add(self, run_id: str, ops: Iterable[PlannedOp]) -> None:
        """Record ops as pending; ops already done keep their row, others join this run (an
        op in doubt joins it still ``running``: only an outcome of its call ends the doubt)."""
        # a list: run again after a reconnect, it must yield the ops again
        unique = list({op.op_id: op for op in ops}.values())  # a row changes once a statement
        with self._transaction(write=True):
            if not self._db.dialect.writable_with:
                self._execute_many(
                    f"INSERT INTO journal ({_ADD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) {_ADD_KEEPS}",
                    [(op.op_id, run_id, op.action, op.entry_id, op.provider,
                      OpStatus.PENDING.value) for op in unique])
                return
            for chunk in _chunks(unique, _ARRAY_CHUNK):
                self._execute(
                    f"INSERT INTO journal ({_ADD_COLUMNS}) SELECT a.op_id, ?, a.action, "
                    "a.entry_id, a.provider, ? FROM unnest(?::text[], ?::text[], ?::text[], "
                    f"?::text[]) AS a(op_id, action, entry_id, provider) {_ADD_KEEPS}",
                    run_id, OpStatus.PENDING.value, *_columns(chunk))

    @reconnecting
    def journal_start(self, run_id: str, op: PlannedOp) -> JournalEntry:
        """Mark an op running before its call (attempts + 1); a done op is returned unchanged."""
        with self._transaction(write=True):
            self._round(run_id, [], [op])
            entry = self._entry(op.op_id)
        assert entry is not None  # inserted or kept in this very transaction
        return entry

    @reconnecting
    def journal_finish(
        self,
        run_id: str,
        op_id: str,
        status: OpStatus,
        *,
        error: str | None = None,
        result: Mapping[str, Any] | None = None,
    ) -> JournalEntry:
        """Record what became of an op in run ``run_id``; return the row as stored.

        ``done``: the provider did it, whichever run asked (a done op stays done, its result
        kept). ``failed``: only while the op is this run's (a superseded runner's late
        failure cannot end the doubt of a newer run's call). ``skipped``: only for this
        run's ops that are not in doubt. ``running``: this run's call ended without a known
        outcome (a deadline): the error is kept and the op stays in doubt.
        """
        outcome = OpOutcome(op_id, status, error, result)
        _check_finish([outcome])
        with self._transaction(write=True):
            self._round(run_id, [outcome], [])
            entry = self._entry(op_id)
        if entry is None:
            raise LookupError(f"no operation {op_id!r} in the journal")
        return entry

    @reconnecting
    def journal_round(
        self, run_id: str, outcomes: Sequence[OpOutcome], starts: Sequence[PlannedOp]
    ) -> frozenset[str]:
        """One transaction of an apply's round: record ``outcomes`` (each as ``journal_finish``
        does), then mark ``starts`` running (each as ``journal_start`` does); return the op_ids
        of ``starts`` found done, which are left unchanged and must not be called."""
        _check_finish(outcomes)
        unique = list({op.op_id: op for op in starts}.values())
        if self._one_statement(outcomes, unique):  # a statement is a transaction of its own
            with self._guarded():
                return self._round(run_id, outcomes, unique)
        with self._transaction(write=True):
            return self._round(run_id, outcomes, unique)

    def _one_statement(self, outcomes: Sequence[OpOutcome], starts: Sequence[PlannedOp]) -> bool:
        """Whether a round is one statement (``_ROUND``): the database can, and no op comes
        twice (a statement changes a row once)."""
        ops = [o.op_id for o in outcomes] + [op.op_id for op in starts]
        return self._db.dialect.writable_with and len(set(ops)) == len(ops)

    def _round(self, run_id: str, outcomes: Sequence[OpOutcome],
               starts: Sequence[PlannedOp]) -> frozenset[str]:
        """Record ``outcomes``, then mark ``starts`` (each op once) running; return those of
        ``starts`` found done."""
        if self._one_statement(outcomes, starts):
            sql = _ROUND.format(clock=self._db.dialect.clock)
            marked = {row[0] for row in self._query(sql, *_round_params(run_id, outcomes, starts))}
        else:
            now = self._clock()
            self._finish(run_id, outcomes, now)
            marked = self._start(run_id, starts, now)
        return frozenset(op.op_id for op in starts if op.op_id not in marked)

    def _start(self, run_id: str, ops: Sequence[PlannedOp], now: float) -> set[str]:
        """Mark ``ops`` running, a statement per chunk; return those marked."""
        marked: set[str] = set()
        for chunk in _chunks(ops):
            rows = self._query(
                "INSERT INTO journal (op_id, run_id, action, entry_id, provider, status, "
                f"attempts, started) VALUES {_rows('(?, ?, ?, ?, ?, ?, 1, ?)', len(chunk))} "
                + _MARK_RUNNING,
                *(value for op in chunk for value in (
                    op.op_id, run_id, op.action, op.entry_id, op.provider,
                    OpStatus.RUNNING.value, now)),
            )
            marked.update(row[0] for row in rows)
        return marked

    def _finish(self, run_id: str, outcomes: Sequence[OpOutcome], now: float) -> None:
        """Record ``outcomes``, a statement per status and chunk (``_FINISH_WHEN``)."""
        # a done op stays done: a late finish (a superseded runner's failed call) must not
        # turn it back into work, nor erase the result of the call that did it
        for status, when in _FINISH_WHEN.items():
            rows = [(o.op_id, o.error, None if o.result is None else
                     dumps_compact(o.result).decode()) for o in outcomes if o.status is status]
            for chunk in _chunks(rows):
                self._execute(  # VALUES names its columns column1, column2 … in both databases
                    "UPDATE journal SET status = ?, error = v.column2, result = v.column3, "
                    f"finished = ? FROM (VALUES {_rows('(?, ?, ?)', len(chunk))}) AS v "
                    f"WHERE journal.op_id = v.column1 AND journal.status <> 'done'{when}",
                    status.value,
                    now,
                    *(value for row in chunk for value in row),
                    *((run_id,) if when else ()),
                )

    @reconnecting
    def journal_abandon(self, run_id: str, op_id: str, why: str) -> bool:
        """Close as skipped an op that the dead run ``run_id`` left in doubt and that no plan
        will send again; False when it has an outcome by now or another run adopted it."""
        with self._write() as now:
            return bool(self._execute(
                "UPDATE journal SET status = 'skipped', error = ?, finished = ? "
                "WHERE op_id = ? AND run_id = ? AND status = 'running'",
                why,
                now,
                op_id,
                run_id,
            ))

    @reconnecting
    def journal(
        self, *, run_id: str | None = None, plan_digest: str | None = None
    ) -> list[JournalEntry]:
        """The journal of one run or of every run of one plan, ordered by op_id."""
        if (run_id is None) == (plan_digest is None):
            raise ValueError("journal() needs exactly one of run_id and plan_digest")
        if run_id is not None:
            sql = f"SELECT {_JOURNAL_J} FROM journal j WHERE j.run_id = ?"
        else:
            sql = (
                f"SELECT {_JOURNAL_J} FROM journal j JOIN runs r ON r.run_id = j.run_id "
                "WHERE r.plan_digest = ?"
            )
        with self._transaction(write=False):
            rows = self._query(sql + " ORDER BY j.op_id", run_id or plan_digest)
        return [_to_entry(row) for row in rows]

    @reconnecting
    def in_doubt(self, run_prefix: str) -> list[JournalEntry]:
        """Ops still ``running`` in runs whose run_id starts with ``run_prefix``, oldest run
        first: their runner died (or was fenced off) during the call."""
        with self._transaction(write=False):
            rows = self._query(
                f"SELECT {_JOURNAL_J} FROM journal j JOIN runs r ON r.run_id = j.run_id "
                f"WHERE j.status = 'running' AND {_STARTS_WITH.format(column='r.run_id')} "
                "ORDER BY r.started, j.op_id",
                len(run_prefix),
                run_prefix,
            )
        return [_to_entry(row) for row in rows]

    @reconnecting
    def done_op_ids(self, plan_digest: str) -> frozenset[str]:
        """The ops of a plan that are done, so a resumed apply skips them."""
        with self._transaction(write=False):
            rows = self._query(
                "SELECT j.op_id FROM journal j JOIN runs r ON r.run_id = j.run_id "
                "WHERE r.plan_digest = ? AND j.status = 'done'",
                plan_digest,
            )
        return frozenset(row[0] for row in rows)

    def _entry(self, op_id: str) -> JournalEntry | None:
        rows = self._query(f"SELECT {_JOURNAL_COLUMNS} FROM journal WHERE op_id = ?", op_id)
        return _to_entry(rows[0]) if rows else None


def _round_params(run_id: str, outcomes: Sequence[OpOutcome],
                  starts: Sequence[PlannedOp]) -> list[str]:
    """``_ROUND``'s parameters: an array per column of the outcomes, then of the marks."""
    return [
        text_array(o.op_id for o in outcomes),
        text_array(o.status.value for o in outcomes),
        text_array(o.error for o in outcomes),
        text_array(None if o.result is None else dumps_compact(o.result).decode()
                   for o in outcomes),
        run_id,
        run_id,
        *_columns(starts),
    ]


def _to_run(row: Row) -> Run:
    run_id, digest, holder, started, finished, status = row
    return Run(run_id, digest, holder, to_time(started), to_maybe_time(finished),
               RunStatus(status))


def _to_entry(row: Row) -> JournalEntry:
    op_id, run_id, action, entry_id, provider, status, attempts, error, started, finished = row[:10]
    result = None if row[10] is None else orjson.loads(row[10])
    return JournalEntry(
        op_id,
        run_id,
        action,
        entry_id,
        provider,
        OpStatus(status),
        int(attempts),
        error,
        to_maybe_time(started),
        to_maybe_time(finished),
        result,
    )
