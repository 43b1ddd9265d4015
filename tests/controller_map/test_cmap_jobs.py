"""Job states in the controller map (N11, N13, N14): ``xce-map job …`` and the provider, on a
real map file. What the planner reads for job-directory retention must follow the job's
life exactly, refuse events out of order, and never be written by a plan."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from reconciler.cmds.map import main
from reconciler.protocol import ErrorCode
from reconciler.providers.controller_map.jobs import NOT_PLANNED, JobEvent, record_jobs
from reconciler.providers.controller_map.provider import ControllerMapProvider
from reconciler.providers.controller_map.reporter import EventRefused
from tests.controller_map.cmap import T0, call, counter, generation, live, ok

AT = ["2027-01-15T09:00:00Z", "2027-01-15T10:00:00Z", "2027-01-15T11:00:00Z",
      "2027-01-15T12:00:00Z", "2027-01-15T13:00:00Z"]
SECONDS = [int(datetime.fromisoformat(t).timestamp()) for t in AT]


def job(provider: ControllerMapProvider, number: str) -> dict[str, Any]:
    return live(provider)[f"job/{number}"]


@pytest.fixture
def xce(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    """``xce-map --workdir <tmp> …`` in-process: (exit code, stdout, stderr)."""
    def run(*argv: str) -> tuple[int, str, str]:
        code = main(["--workdir", str(tmp_path), *argv])
        out, err = capsys.readouterr()
        return code, out, err
    return run


def test_a_job_starts_is_requeued_runs_again_ends_and_is_fetched(
    provider: ControllerMapProvider, xce: Any
) -> None:
    code, out, err = xce("job", "start", "1234", "--user", "alice", "--at", AT[0])
    assert (code, err) == (0, "")
    assert out == ("job/1234: started, running (alice, attempt 1)\n"
                   "recorded start for 1 job(s): 1 changed, 0 unchanged; generation 1\n")
    assert job(provider, "1234") == {
        "id": "job/1234", "kind": "job", "state": "running", "source": "reporter",
        "provider": "controller", "spec": {"user": "alice", "attempt": 1, "started": SECONDS[0]},
    }
    code, out, _ = xce("job", "requeue", "1234", "--at", AT[1])
    assert code == 0 and "job/1234: running → pending (attempt 2)" in out
    assert job(provider, "1234")["spec"] == {"user": "alice", "attempt": 2, "started": SECONDS[0]}
    code, out, _ = xce("job", "start", "1234", "--at", AT[2])  # a known job needs no --user
    assert code == 0 and "job/1234: pending → running (attempt 2)" in out
    xce("job", "end", "1234", "--at", AT[3])
    code, out, _ = xce("job", "fetch", "1234", "--user", "alice", "--at", AT[4])
    assert code == 0 and f"job/1234: finished, outputs fetched at {AT[4]}" in out
    assert job(provider, "1234") == {
        "id": "job/1234", "kind": "job", "state": "finished", "source": "reporter",
        "provider": "controller",
        "spec": {"user": "alice", "attempt": 2, "started": SECONDS[2], "ended": SECONDS[3],
                 "fetched": SECONDS[4]},
    }
    assert "owner" not in job(provider, "1234")  # nobody's site-config owns a job


def test_a_requeue_of_a_finished_job_clears_its_end_and_fetch(
    provider: ControllerMapProvider, xce: Any
) -> None:
    """Slurm requeues finished batch jobs too; the directory must not be evicted on the
    previous attempt's clock, so ``ended`` and ``fetched`` go with the requeue."""
    xce("job", "start", "7", "--user", "bob", "--at", AT[0])
    xce("job", "end", "7", "--at", AT[1])
    xce("job", "fetch", "7", "--at", AT[2])
    code, out, _ = xce("job", "requeue", "7", "--at", AT[3])
    assert code == 0 and "job/7: finished → pending (attempt 2)" in out
    spec = job(provider, "7")["spec"]
    assert spec == {"user": "bob", "attempt": 2, "started": SECONDS[0]}
    xce("job", "end", "7", "--at", AT[4])  # cancelled while pending: it ends without running
    assert job(provider, "7")["state"] == "finished"
    assert job(provider, "7")["spec"]["ended"] == SECONDS[4]


def test_events_repeat_safely_and_the_first_time_stays(
    provider: ControllerMapProvider, xce: Any
) -> None:
    """Reporters retry: a repeat changes nothing, the generation included."""
    xce("job", "start", "1", "2", "--user", "alice", "--at", AT[0])
    xce("job", "end", "1", "2", "--at", AT[1])
    xce("job", "fetch", "1", "--at", AT[2])
    before = ok(provider, "inventory")
    code, out, _ = xce("job", "start", "1", "--user", "alice", "--at", AT[3])
    assert code == 1  # finished: a start is refused (below), not a repeat
    for argv in (["end", "1", "2", "--at", AT[3]], ["fetch", "1", "--at", AT[4]],
                 ["requeue", "2", "--at", AT[3]], ["requeue", "2", "--at", AT[4]]):
        xce("job", *argv)
    after = live(provider)
    assert after["job/1"] == {e["id"]: e for e in before["entries"]}["job/1"]
    assert after["job/2"]["state"] == "pending" and after["job/2"]["spec"]["attempt"] == 2
    code, out, _ = xce("job", "fetch", "1", "--at", AT[4])
    assert out.startswith("job/1: outputs already fetched\n")
    assert out.endswith("0 changed, 1 unchanged; generation 4\n")  # requeue was the last change
    code, out, _ = xce("job", "fetch", "1", "--at", "2027-01-15T10:30:00Z")  # late, earlier
    assert job(provider, "1")["spec"]["fetched"] == SECONDS[1] + 1800  # the first fetch


@pytest.mark.parametrize(
    ("setup", "argv", "code", "needles"),
    [
        ([["start", "5", "--user", "alice"]], ["fetch", "5"], "XCE720",
         ("job/5 is running", "xce-map job end 5")),
        ([["start", "5", "--user", "alice"], ["end", "5"]], ["start", "5"], "XCE720",
         ("job/5 has finished", "xce-map job requeue 5")),
        ([], ["end", "9"], "XCE721", ("job/9 is not in the controller map",
                                     "xce-map job start 9 --user USER")),
        ([], ["requeue", "9"], "XCE721", ("job/9", "cannot requeue")),
        ([], ["start", "9"], "XCE723", ("job/9 is new", "--user USER")),
        ([["start", "5", "--user", "alice"]], ["end", "5", "--user", "bob"], "XCE723",
         ("job/5 is alice's job, not bob's",)),
        ([], ["start", "1234[7]", "--user", "alice"], "XCE722", ("'1234[7]'", "write 1234")),
        ([], ["start", "12", "--user", "../etc"], "XCE723",
         ("cannot be a user name", "contains '/'")),
        ([], ["start", "--user", "alice"], "XCE737", ("JOB",)),
    ],
)
def test_refusals_name_the_job_and_the_fix(
    provider: ControllerMapProvider, xce: Any, setup: list[list[str]], argv: list[str],
    code: str, needles: tuple[str, ...],
) -> None:
    for step in setup:
        assert xce("job", *step)[0] == 0
    before = ok(provider, "inventory")
    rc, out, err = xce("job", *argv)
    assert (rc, out) == (1, "")
    assert f"[{code}]" in err and "Traceback" not in err
    for needle in needles:
        assert needle in err
    assert ok(provider, "inventory") == before


def test_a_refused_batch_records_nothing(provider: ControllerMapProvider, xce: Any) -> None:
    xce("job", "start", "1", "2", "--user", "alice", "--at", AT[0])
    before = ok(provider, "inventory")
    rc, _, err = xce("job", "end", "1", "2", "3", "4", "--at", AT[1])
    assert rc == 1
    assert err.count("XCE721") == 2 and "job/3" in err and "job/4" in err
    assert "job/1" not in err and "nothing in this batch was recorded" in err
    assert ok(provider, "inventory") == before  # jobs 1 and 2 did not end either
    with pytest.raises(EventRefused) as refused:
        record_jobs(provider.store, JobEvent.FETCH, ["1", "2"], T0, provider.name)
    assert [r.id for r in refused.value.refusals] == ["job/1", "job/2"]
    assert ok(provider, "inventory") == before


def test_inventory_holds_jobs_beside_the_planned_entries(
    provider: ControllerMapProvider, xce: Any
) -> None:
    ok(provider, "create", entry=counter("slots", "host/cn1", 8))
    xce("job", "start", "41", "42", "--user", "carol", "--at", AT[0])
    assert ok(provider, "info")["capabilities"].count("job") == 1
    assert sorted(live(provider)) == ["counter/slots@host/cn1", "job/41", "job/42"]
    code, out, _ = xce("show", "--kind", "job")
    assert code == 0
    assert out.splitlines() == [
        "ID      STATE    USER   ATTEMPT  STARTED               ENDED  FETCHED",
        f"job/41  running  carol  1        {AT[0]}  -      -",
        f"job/42  running  carol  1        {AT[0]}  -      -",
        "2 entries, generation 2",
    ]


@pytest.mark.parametrize(
    ("verb", "params"),
    [
        ("create", {"entry": {"id": "job/1", "kind": "job", "state": "finished",
                              "source": "config", "spec": {"user": "alice"}}}),
        ("update", {"id": "job/1", "changes": {"spec": {"ended": 1}}}),
        ("update", {"entry": {"id": "job/1", "kind": "job", "source": "config"}}),
        ("delete", {"id": "job/1"}),
    ],
)
def test_a_plan_never_writes_a_job(
    provider: ControllerMapProvider, xce: Any, verb: str, params: dict[str, Any]
) -> None:
    xce("job", "start", "1", "--user", "alice", "--at", AT[0])
    before = ok(provider, "inventory")
    reply = call(provider, verb, **params)
    assert reply.error is not None and reply.error.code is ErrorCode.INVALID_ARGUMENT
    assert reply.error.message == f"job/1: {NOT_PLANNED}"
    assert ok(provider, "inventory") == before


def test_many_jobs_in_one_batch(provider: ControllerMapProvider) -> None:
    """A scheduler reports jobs by the thousand: one transaction, one generation each
    (tests/controller_map/test_cmap_scale.py times batches of this size)."""
    jobs = [str(1_000_000 + i) for i in range(5_000)]
    record_jobs(provider.store, JobEvent.START, jobs, T0, provider.name, user="alice")
    report = record_jobs(provider.store, JobEvent.END, jobs, T0 + 60, provider.name)
    assert len(report.moved) == 5_000 and generation(provider) == 2
    assert {e["state"] for e in live(provider).values()} == {"finished"}
