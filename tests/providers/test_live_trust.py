"""What the live map refuses to trust (issue 8 §1 and §8): an id two providers report, a
provider whose generation went down since the state store recorded it, and ids beyond the
compiler's name limits (1 MiB ids used to be printed in full, 52 MB of plan)."""

from __future__ import annotations

import json
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from compiler.contract.supply_map import Entry, SupplyMap
from compiler.core.names import MAX_NAME_BYTES
from compiler.core.problems import Severity, UserError
from reconciler.live import (
    MAX_ID_BYTES,
    distrust_rollbacks,
    entry_errors,
    gather_live,
    load_live_snapshot,
    trust_generations,
)
from reconciler.plan.file import stale_entries
from reconciler.planner import make_plan
from reconciler.state import StateStore, open_store
from tests.helpers import ok
from tests.providers.kit import OWNER, notes_binding
from tests.state.targets import pg_base_url, with_options

# -- one id, two providers --------------------------------------------------------------


def _seeded(tmp_path: Path, name: str, state: Path) -> dict[str, Any]:
    from reconciler.providers.registry import open_provider

    binding = notes_binding(tmp_path, name, state=state)
    t = open_provider(name, binding, tmp_path)
    ok(t, "create", op_id=f"seed-{name}", epoch=1, owner=OWNER,
       params={"entry": {"id": f"note/{name}-1"}})
    t.close()
    return binding


def _note(entry_id: str, provider: str) -> Entry:
    return Entry(entry_id, "note", "available", "config", provider, owner=OWNER)


def test_a_contested_entry_is_planned_for_by_neither_provider(tmp_path: Path) -> None:
    """Two real providers answer for one state file, so both list note/a-1; config binds it
    to 'a'. Before, the name sorting first won: 'a' was trusted and the entry in sync; a
    config that removed it would have deleted it at 'a' on the strength of either report."""
    shared = tmp_path / "one-state.json"
    providers = {"a": _seeded(tmp_path, "a", shared), "b": notes_binding(tmp_path, "b",
                                                                        state=shared)}
    live = gather_live({"providers": providers}, tmp_path, OWNER).live
    settings = {"owner": OWNER, "safety": {"min_entries": 100}}
    for desired_entries in ({"note/a-1": _note("note/a-1", "a")}, {}):  # kept, then removed
        desired = SupplyMap(desired_entries, owner=OWNER, settings=settings)
        plan = make_plan(desired, live, now=0)
        assert plan.actions == ()
        [note] = plan.unknown
        assert note.entry == "note/a-1"
        assert "'a' and 'b'" in note.reason and "neither report is trusted" in note.reason


def test_three_providers_reporting_one_id_are_all_named(tmp_path: Path) -> None:
    shared = tmp_path / "one-state.json"
    providers = {"a": _seeded(tmp_path, "a", shared),
                 "b": notes_binding(tmp_path, "b", state=shared),
                 "c": notes_binding(tmp_path, "c", state=shared)}
    result = gather_live({"providers": providers}, tmp_path, OWNER)
    assert result.live.entries == {}
    assert "'a' and 'b' and 'c'" in result.live.unknown_entries["note/a-1"]
    assert [p.subject for p in result.problems] == ["note/a-1"]  # one problem per id


def test_a_saved_plan_cannot_be_verified_against_a_contested_entry() -> None:
    """The plan saw the entry absent (fingerprint 'absent'); now two providers report it.
    Its absence from the map proves nothing, so it counts as changed."""
    live = SupplyMap({}, owner=OWNER, unknown_entries={"note/x": "reported by 'a' and 'b'"})
    plan = make_plan(SupplyMap({"note/x": _note("note/x", "a")}, owner=OWNER,
                               settings={"owner": OWNER}), SupplyMap({}, owner=OWNER), now=0)
    assert plan.fingerprints == {"note/x": "absent"}
    assert stale_entries(plan, live) == ["note/x"]


# -- generations that go down -----------------------------------------------------------


def _live(**generations: int) -> SupplyMap:
    entries = {f"note/{p}-1": _note(f"note/{p}-1", p) for p in generations}
    return SupplyMap(entries, owner=OWNER, generations=generations)


def test_a_lower_generation_makes_the_provider_unknown_naming_both() -> None:
    checked = distrust_rollbacks(_live(a=7, b=3, c=9), {"a": 7, "b": 5, "gone": 2})
    assert sorted(checked.live.entries) == ["note/a-1", "note/c-1"]  # equal and new: trusted
    assert list(checked.live.unknown) == ["b"]
    [problem] = checked.problems
    assert problem.code == "XCE714" and problem.severity is Severity.WARNING
    assert problem.subject == "b"
    assert "generation 3, lower than generation 5 recorded" in problem.message
    assert "--accept-generation" in problem.hint


def test_a_provider_already_unknown_is_not_judged_by_its_generation() -> None:
    live = SupplyMap({}, owner=OWNER, generations={"a": 1}, unknown={"a": "partial"})
    checked = distrust_rollbacks(live, {"a": 9})
    assert checked.problems == () and checked.live.unknown == {"a": "partial"}


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StateStore]:
    """A real state store of each backend (PostgreSQL in a schema of its own)."""
    if request.param == "sqlite":
        with open_store(str(tmp_path / "state.db"), tmp_path / "unused", env={}) as opened:
            yield opened
        return
    schema = f"xce_g_{secrets.token_hex(6)}"
    with psycopg.connect(pg_base_url(), autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            url = with_options(pg_base_url(), options=f"-csearch_path={schema}")
            with open_store(url, tmp_path / "unused", env={}) as opened:
                yield opened
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def test_the_store_keeps_the_highest_generation(store: StateStore) -> None:
    store.record_generations("s", {"a": 5, "b": 2**64 - 1})
    store.record_generations("s", {"a": 3, "b": 7, "c": 0})  # lower ones never replace it
    store.record_generations("other", {"a": 1})  # sites are apart
    assert store.provider_generations("s") == {"a": 5, "b": 2**64 - 1, "c": 0}
    store.record_generations("s", {"a": 40})
    store.accept_generation("s", "b", 7)  # replaced on purpose: the lower one is the record
    assert store.provider_generations("s") == {"a": 40, "b": 7, "c": 0}
    assert store.provider_generations("other") == {"a": 1}
    with pytest.raises(ValueError):
        store.record_generations("s", {"a": 2**64})


def test_a_gather_records_what_it_trusted_and_a_snapshot_nothing(store: StateStore) -> None:
    first = trust_generations(_live(a=4, b=9), store, "s", gathered=True)
    assert first.problems == ()
    assert store.provider_generations("s") == {"a": 4, "b": 9}
    behind = trust_generations(_live(a=6, b=2), store, "s", gathered=True)
    assert list(behind.live.unknown) == ["b"]
    assert store.provider_generations("s") == {"a": 6, "b": 9}  # b's rollback not recorded
    snap = trust_generations(_live(a=50, b=1), store, "s", gathered=False)
    assert list(snap.live.unknown) == ["b"]  # a snapshot is checked …
    assert store.provider_generations("s") == {"a": 6, "b": 9}  # … but never recorded


def test_accepting_a_generation_records_it_and_trusts_the_provider(store: StateStore) -> None:
    trust_generations(_live(a=30), store, "s", gathered=True)
    accepted = trust_generations(_live(a=2), store, "s", gathered=True, accept=["a"])
    assert accepted.problems == () and "note/a-1" in accepted.live.entries
    assert store.provider_generations("s") == {"a": 2}


def test_what_cannot_be_accepted_is_an_error_naming_the_provider(store: StateStore) -> None:
    partial = SupplyMap({}, owner=OWNER, generations={"p": 1}, unknown={"p": "partial"})
    for live, name, gathered, store_ in ((partial, "p", True, store),
                                         (_live(a=1), "nope", True, store),
                                         (_live(a=1), "a", False, store),
                                         (_live(a=1), "a", True, None)):
        [problem] = trust_generations(live, store_, "s", gathered=gathered,
                                      accept=[name]).problems
        assert problem.code == "XCE715" and problem.severity is Severity.ERROR
        assert problem.subject == name
    assert store.provider_generations("s") == {"a": 1}  # what the gathers trusted, no more


# -- names beyond the compiler's limits -------------------------------------------------


def _doc(**fields: Any) -> dict[str, Any]:
    return {"id": "note/x", "kind": "note", "state": "available", "source": "config", **fields}


@pytest.mark.parametrize(("doc", "field"), [
    (_doc(id="note/" + "x" * 2**20), "id"),  # the 1 MiB id
    (_doc(id="note/" + "é" * 128), "id"),  # 128 characters, 256 bytes: one name too long
    (_doc(id="note/" + "/".join(["n" * 200] * 11)), "id"),  # short names, too long an id
    (_doc(location="group/" + "g" * 256), "location"),
    (_doc(owner="site/" + "o" * 256), "owner"),
    (_doc(state="s" * 256), "state"),
    (_doc(kind="k" * 256, id="k" * 256 + "/x"), "kind"),
    (_doc(provider="p" * 256), "provider"),
    (_doc(id="note/" + "\udcff" * 86), "id"),  # a built-in's undecodable file name: no crash
])
def test_an_over_long_name_is_an_error_of_its_field(doc: dict[str, Any], field: str) -> None:
    errors = entry_errors(doc)
    assert field in [f for f, _ in errors]  # (a long kind makes a long name in the id too)
    assert all("bytes" in message and len(message) < 500  # the value is not echoed whole
               for _, message in errors)


@pytest.mark.parametrize("doc", [
    _doc(id="note/" + "n" * MAX_NAME_BYTES),
    _doc(id="note/" + "é" * (MAX_NAME_BYTES // 2)),
    _doc(id="dataset-copy/" + "@".join(["n" * 250] * 4), kind="dataset-copy"),
    _doc(id="note/" + "/".join(["n" * 200] * 10)),  # 10 names: 2,015 bytes
])
def test_names_within_the_limits_are_accepted(doc: dict[str, Any]) -> None:
    assert len(doc["id"].encode()) <= MAX_ID_BYTES
    assert entry_errors(doc) == []


def _huge_id_provider(tmp_path: Path) -> dict[str, Any]:
    """A real exec provider whose inventory holds one valid entry and one 1 MiB id."""
    script = tmp_path / "huge.py"
    entries = [_doc(id="note/ok"), _doc(id="note/" + "x" * 2**20)]
    reply = {"ok": True, "result": {"generation": 3, "complete": True, "entries": entries}}
    script.write_text(f"import sys\nsys.stdin.read()\nprint({json.dumps(json.dumps(reply))})\n")
    return {"kind": "exec", "command": [sys.executable, str(script)], "timeout": 20}


def test_an_inventory_with_a_1_mib_id_makes_its_provider_unknown(tmp_path: Path) -> None:
    result = gather_live({"providers": {"huge": _huge_id_provider(tmp_path)}}, tmp_path, OWNER)
    assert result.live.entries == {}  # not even the valid entry: the report is invalid
    assert list(result.live.unknown) == ["huge"]
    [problem] = result.problems
    assert problem.code == "XCE703" and "'id' is 1048581 bytes long" in problem.message
    assert len(problem.message) < 500 and len(result.live.unknown["huge"]) < 1200
    plan = make_plan(SupplyMap({"note/ok": _note("note/ok", "huge")}, owner=OWNER,
                               settings={"owner": OWNER}), result.live, now=0)
    assert plan.actions == () and [n.entry for n in plan.unknown] == ["note/ok"]


def test_a_snapshot_with_an_over_long_id_names_the_entry(tmp_path: Path) -> None:
    path = tmp_path / "live.json"
    path.write_text(json.dumps({"entries": [_doc(id="note/ok"),
                                            _doc(id="note/" + "x" * 300)]}))
    with pytest.raises(UserError) as caught:
        load_live_snapshot(path)
    [problem] = caught.value.problems
    assert problem.code == "XCE709" and problem.where is not None
    assert problem.where.ypath == ("entries", 1, "id")
    assert "it is 300 bytes long" in problem.message and len(problem.message) < 500
