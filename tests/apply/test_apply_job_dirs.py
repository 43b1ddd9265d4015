"""A volume's retention, end to end (N14): the job states the controller map records, the job
directories the directory provider reports on real trees, the planned eviction, and the
apply that removes the directory — and refuses the plan when the tree was written after
the plan saw it (the provider's own refusal of such a race is in
tests/providers/test_directory_jobs.py).

The site is compiled from site-config; every provider is real. The plan is made 9 days
ahead of the clock (a tree's ctime cannot be set back), as the pipeline's ``now``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import reconciler.cmds.apply as apply_cli
import reconciler.cmds.map as map_cli
import reconciler.cmds.plan as plan_cli
from compiler.contract.build_files import STATE_FILE
from reconciler.apply import ApplyOptions, ApplyReport, apply
from reconciler.pipeline import Desired, gather, load_desired, plan_for
from reconciler.plan.file import SavedPlan
from reconciler.plan.model import Plan, Verb
from reconciler.state import StateStore, open_store
from tests.apply.small_site import write_site

DAY = 86400
ALICE = Path("site/.xce/fs/shared/xce/alice")  # the volume's root is under the workdir


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The small site with ``retention: 7d`` on its volume, applied once (volume and user
    directories made), in a fresh folder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("XCE_STATE_URL", raising=False)
    storage = write_site(tmp_path / "site") / "storage.yaml"
    storage.write_text(storage.read_text().replace("users: [alice, bob]\n",
                                                   "users: [alice, bob]\n    retention: 7d\n"))
    assert plan_cli.main(["site", "--out", "plan.json"]) == 2
    assert apply_cli.main(["plan.json"]) == 0
    return tmp_path


def _job(job: str) -> Path:
    """A finished job's directory, as the worker writes it, and its states in the map."""
    top = ALICE / job
    top.mkdir()
    for name, data in (("in", b"input\n"), ("out", b"o" * 4096), ("err", b"")):
        (top / name).write_bytes(data)
    for event in (["start", job, "--user", "alice"], ["end", job]):
        assert map_cli.main(["--site", "site", "job", *event]) == 0
    return top


@contextmanager
def _store() -> Iterator[StateStore]:
    with open_store(None, Path("site/.xce") / STATE_FILE) as store:
        yield store


def _plan_later(desired: Desired, days: float) -> Plan:
    return plan_for(desired, gather(desired, Path("site/.xce")), now=time.time() + days * DAY,
                    destroy=True)


def _apply(desired: Desired, plan: Plan) -> ApplyReport:
    with _store() as store:
        return apply(desired, SavedPlan(plan, True), store, Path("site/.xce"),
                     ApplyOptions(allow_destroy=True))


def test_a_planned_eviction_removes_the_job_directory(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    done, running = _job("1234"), ALICE / "1300"
    running.mkdir()
    assert map_cli.main(["--site", "site", "job", "start", "1300", "--user", "alice"]) == 0
    desired = load_desired(Path("site"), None)
    assert _plan_later(desired, 6).actions == ()  # within the retention: nothing to do
    plan = _plan_later(desired, 9)
    [action] = plan.actions
    assert (action.verb, action.entry, action.destructive) == (
        Verb.EVICT, "job-dir/shared/alice/1234", True)
    assert action.reason == "evict job dir alice/1234: finished 9 days ago, retention 7 days"
    assert "job/1234" in plan.fingerprints  # a requeue before the apply makes the plan stale
    report = _apply(desired, plan)
    assert report.exit_code == 0, [o.message for o in report.outcomes]
    assert not done.exists() and running.is_dir() and ALICE.is_dir()
    assert [name for name in os.listdir(ALICE) if name.startswith(".")] == []  # no aside left
    assert _plan_later(desired, 9).actions == ()  # gone from the inventory too


def test_a_job_directory_written_after_the_plan_is_kept(here: Path) -> None:
    top = _job("1235")
    desired = load_desired(Path("site"), None)
    plan = _plan_later(desired, 9)
    assert [a.entry for a in plan.actions] == ["job-dir/shared/alice/1235"]
    later = time.time() + 3 * DAY  # a late write, 6 days before the plan's "now"
    os.utime(top / "out", (later, later))
    report = _apply(desired, plan)
    assert (report.result, report.outcomes) == ("stale", ())  # refused before any call
    assert any("job-dir/shared/alice/1235" in (p.subject or "") + p.message
               for p in report.stale), report.stale
    assert (top / "out").stat().st_size == 4096 and (top / "in").is_file()
    assert _plan_later(desired, 9).actions == ()  # planned again: written within the retention
