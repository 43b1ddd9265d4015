"""The apply's journal rounds: outcomes and marks in one transaction (one statement on
PostgreSQL, bound as arrays), with the same meaning as ``journal_finish``/``journal_start``."""

from __future__ import annotations

from reconciler.state import OpStatus, PlannedOp, StateStore
from reconciler.state.store import OpOutcome

PLAN = "sha256:" + "a" * 64
# text that an array literal must carry unchanged: quotes, backslashes, separators, the
# word NULL, an empty string, a line break and non-ASCII
AWKWARD = ['say "hi", {then} \\ leave', "NULL", "", "line one\nline two", "naïve ✓ ,}{\\\\"]


def op(n: str) -> PlannedOp:
    return PlannedOp(f"op-{n}", "create", f"volume-dir/shared/{n}", "shared-fs")


def state(store: StateStore, run_id: str) -> dict[str, tuple[str, str, int, str | None]]:
    return {e.op_id: (e.run_id, e.status.value, e.attempts, e.error)
            for e in store.journal(run_id=run_id)}


def test_a_round_finishes_and_marks_as_finish_and_start_do(store: StateStore) -> None:
    store.start_run("r1", PLAN, "h")
    store.start_run("r2", PLAN, "h")
    store.journal_add("r1", [op(n) for n in "abcdefg"])
    for n in "abcd":
        store.journal_start("r1", op(n))
    store.journal_start("r2", op("b"))  # r2 took b over: r1's late failure must not end it
    store.journal_finish("r1", "op-e", OpStatus.DONE, result={"n": 1})
    found_done = store.journal_round("r1", [
        OpOutcome("op-a", OpStatus.DONE, None, {"size": 3}),
        OpOutcome("op-b", OpStatus.FAILED, "late", None),
        OpOutcome("op-c", OpStatus.SKIPPED, "in doubt", None),  # running: stays in doubt
        OpOutcome("op-d", OpStatus.RUNNING, "DEADLINE_EXCEEDED", None),
        OpOutcome("op-f", OpStatus.SKIPPED, "dependency", None),
    ], [op("e"), op("g"), op("new")])
    assert found_done == {"op-e"}
    assert state(store, "r1") == {
        "op-a": ("r1", "done", 1, None),
        "op-c": ("r1", "running", 1, None),
        "op-d": ("r1", "running", 1, "DEADLINE_EXCEEDED"),
        "op-e": ("r1", "done", 0, None),
        "op-f": ("r1", "skipped", 0, "dependency"),
        "op-g": ("r1", "running", 1, None),
        "op-new": ("r1", "running", 1, None),
    }
    assert state(store, "r2") == {"op-b": ("r2", "running", 2, None)}
    entries = {e.op_id: e for e in store.journal(run_id="r1")}
    assert entries["op-a"].result == {"size": 3} and entries["op-e"].result == {"n": 1}
    # one clock per round: what it finished and what it marked carry the same time
    assert entries["op-a"].finished == entries["op-g"].started == entries["op-new"].started


def test_awkward_text_is_kept_exactly(store: StateStore) -> None:
    store.start_run("r1", PLAN, "h")
    ops = [PlannedOp(f"op-{i}", "create", f'volume-dir/"x", {{{i}}} \\', "p,q") for i in
           range(len(AWKWARD))]
    assert store.journal_round("r1", [], ops) == frozenset()
    store.journal_round("r1", [OpOutcome(o.op_id, OpStatus.FAILED, text, None)
                               for o, text in zip(ops, AWKWARD, strict=True)], [])
    entries = store.journal(run_id="r1")
    assert [(e.entry_id, e.provider, e.error) for e in entries] == [
        (o.entry_id, "p,q", text) for o, text in zip(ops, AWKWARD, strict=True)]
    store.journal_round("r1", [], ops[:1])
    store.journal_round("r1", [OpOutcome("op-0", OpStatus.DONE, None, {"said": AWKWARD})], [])
    (first, *_) = store.journal(run_id="r1")
    assert first.result == {"said": AWKWARD}


def test_an_op_in_both_halves_is_finished_then_marked(store: StateStore) -> None:
    """Not one statement (a row changes once per statement), but the same meaning."""
    store.start_run("r1", PLAN, "h")
    store.journal_start("r1", op("a"))
    found = store.journal_round("r1", [OpOutcome("op-a", OpStatus.FAILED, "boom", None)],
                                [op("a"), op("a")])
    assert found == frozenset()
    assert state(store, "r1") == {"op-a": ("r1", "running", 2, None)}


def test_big_rounds_and_repeated_ops_in_one_add(store: StateStore) -> None:
    store.start_run("r1", PLAN, "h")
    many = [op(f"{i:05d}") for i in range(1200)]
    store.journal_add("r1", [*many, many[0]])  # an op twice in one add: one row
    assert store.journal_round("r1", [], many) == frozenset()
    store.journal_round("r1", [OpOutcome(o.op_id, OpStatus.DONE, None, None) for o in many],
                        [])
    assert {e.status for e in store.journal(run_id="r1")} == {OpStatus.DONE}
    assert len(store.done_op_ids(PLAN)) == 1200
