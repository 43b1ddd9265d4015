"""Issue 19 §1: the same drift, three times, is fixed three times.

A user's directory removed by hand is re-made by the apply; removed again, the next plan
is equal to the first — and was once applied with the first's op_ids, so the journal called
it "already done" and the provider replayed its old reply: nothing was re-made, and the
plan showed the change for ever. Each plan now carries an identity of its own. The small
site (controller map, directory provider) on real SQLite and PostgreSQL stores, applied as
CI would: ``--auto-approve``, a saved plan, and a plan recorded for review.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from contextlib import closing
from pathlib import Path

import pytest

import reconciler.cmds.apply as apply_cli
import reconciler.cmds.plan as plan_cli
from reconciler.state import open_store
from tests.apply.small_site import write_site
from tests.state.conftest import pg_admin, pg_target, sqlite_target, target  # noqa: F401
from tests.state.targets import Target

ALICE = "volume-dir/shared/alice"
MODES = {
    "auto-approve": (None, ["site", "--auto-approve"]),
    "saved plan": (["site", "--out", "plan.json"], ["plan.json"]),
    "reviewed": (["site", "--record"], ["--reviewed", "site"]),
}


def _ledgers(site: Path) -> dict[str, list[str]]:
    """Every op_id each built-in provider's ledger holds, repeats kept."""
    providers = site / ".xce" / "providers"
    found: dict[str, list[str]] = {}
    for db in [*providers.glob("*/opledger.sqlite"), providers / "controller" / "map.sqlite"]:
        with closing(sqlite3.connect(db)) as conn:
            found[db.parent.name] = [row[0] for row in conn.execute("SELECT op_id FROM ops")]
    return found


def _apply(mode: str, state: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, int]:
    """Plan (unless --auto-approve) and apply as ``mode`` does; the report's counts."""
    plan, apply = MODES[mode]
    if plan is not None:
        assert plan_cli.main([*plan, *state]) == 2
    capsys.readouterr()
    code = apply_cli.main([*apply, *state, "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    counts: dict[str, int] = json.loads(out)["counts"]
    return counts


@pytest.mark.parametrize("mode", MODES, ids=list(MODES))
def test_the_same_drift_three_times_is_fixed_three_times(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        target: Target, mode: str) -> None:  # noqa: F811
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("XCE_STATE_URL", raising=False)
    site = write_site(tmp_path / "site")
    state = ["--state", target.url]
    assert _apply("auto-approve", state, capsys)["done"] == 19
    alice = site / ".xce" / "fs" / "shared" / "xce" / "alice"
    for _ in range(3):
        alice.rmdir()
        assert _apply(mode, state, capsys) == {"done": 1, "already-done": 0, "failed": 0,
                                               "skipped": 0}
        assert alice.is_dir()
        capsys.readouterr()
        assert plan_cli.main(["site", *state]) == 0, capsys.readouterr().out
    with target.open() as store:
        made = [e.op_id for run in store.runs(limit=10) for e in store.journal(run_id=run.run_id)
                if e.entry_id == ALICE]
    assert len(made) == 4 and len(set(made)) == 4  # one op per plan: the first apply's, 3 more
    ledgers = _ledgers(site)
    for name, ops in ledgers.items():
        assert [op for op, n in Counter(ops).items() if n > 1] == [], name  # each op once
    assert set(made) <= set(ledgers["shared-fs"])


def test_a_store_keeps_one_signing_key(target: Target, tmp_path: Path) -> None:  # noqa: F811
    """Drawn on first use, the same ever after, and another store's is another."""
    with target.open() as store:
        first = store.plan_key()
    with target.open() as store:
        assert store.plan_key() == first and len(first) == 32
    with open_store(str(tmp_path / "other.sqlite"), Path("unused")) as other:
        assert other.plan_key() != first
