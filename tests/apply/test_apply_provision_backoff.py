"""P6 with real parts: a provisioned host that never joins costs a few instances, not one
per join deadline for ever.

The embedded controller map holds the host, the cloud simulator (an exec provider in its
own process) the instance, the state store (SQLite and PostgreSQL) the attempts. The
planner's clock is moved forward (``now``); the apply and the providers keep the real one.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

import reconciler.cmds.plan as plan_cli
from compiler.contract.supply_map import Entry, SupplyMap
from reconciler.apply import FreshPlan, RetryPolicy
from reconciler.cmds import map as map_cli
from reconciler.pipeline import gather, plan_for, recorded_attempts
from reconciler.plan.attempts import ProvisionAttempts
from reconciler.plan.model import Action, Plan
from reconciler.planner.backoff import instance_identity
from reconciler.protocol import Request
from reconciler.providers.base import state_dir
from reconciler.testdoubles.sim_provider import handle
from tests.apply.conftest import OWNER, Site

DEADLINE = 60  # seconds the host may take to join
INSTANCE = "instance/b01"


@dataclass
class Burst:
    """One provisioned host, ``b01``, whose image never joins unless the test says so."""

    site: Site

    def write(self, template: str = "t1", **provisioning: Any) -> None:
        spec = {"join_deadline": DEADLINE, "template": template}
        entries = [
            Entry("host/b01", "host", "available", "provisioned", "ctl",
                  attributes={"group": "burst"}, spec=spec, owner=OWNER),
            Entry(INSTANCE, "instance", "available", "provisioned", "cloud",
                  attributes={"group": "burst"}, spec={**spec, "group": "burst"}, owner=OWNER),
        ]
        settings = {"owner": OWNER, "safety": {"min_entries": 1000},
                    "settle": {"wait": "window", "window": 0},  # the map is new: no settling
                    **({"provisioning": provisioning} if provisioning else {})}
        supply = SupplyMap({e.id: e for e in entries}, site="test", owner=OWNER,
                           revision="0123456789abcdef", settings=settings)
        cloud = [sys.executable, "-m", "reconciler.testdoubles.sim_provider", "cloud"]
        bindings = {"providers": {"ctl": {"kind": "controller-map"},
                                  "cloud": {"kind": "exec", "command": cloud, "timeout": 30}}}
        self.site.desired_file.parent.mkdir(parents=True, exist_ok=True)
        self.site.desired_file.write_bytes(supply.dumps())
        (self.site.desired_file.parent / "bindings.json").write_bytes(orjson.dumps(bindings))

    def plan(self, later: float) -> Plan:
        """The plan ``later`` seconds from now, with the attempts the store recorded."""
        desired = self.site.desired()
        with self.site.store() as store:
            attempts = recorded_attempts(store, desired)
        return plan_for(desired, gather(desired, self.site.workdir),
                        now=time.time() + later, attempts=attempts)

    def apply(self, plan: Plan, **options: Any) -> str:
        return self.site.apply(plan, destroy=True, allow_destroy=True, **options).result

    def attempts(self) -> dict[str, ProvisionAttempts]:
        with self.site.store() as store:
            return store.provision_attempts("test")

    def report(self, event: str) -> None:
        argv = ["--workdir", str(self.site.workdir), "--provider", "ctl", "report", event, "b01"]
        assert map_cli.main(argv) == 0

    def instance_live(self) -> bool:
        """In the cloud simulator's account (read from its state file: no process)."""
        state = state_dir(self.site.workdir, "cloud") / "state.json"
        return INSTANCE in orjson.loads(state.read_bytes())["entries"]


def only(plan: Plan) -> Action:
    assert len(plan.actions) == 1, [a.id for a in plan.actions]
    return plan.actions[0]


def fail_attempt(burst: Burst, attempt: int) -> None:
    """Past the join deadline: the instance is released and the failure recorded."""
    plan = burst.plan(later=2 * DEADLINE)
    release = only(plan)
    assert release.id == f"release:{INSTANCE}"
    assert release.failed_attempt is not None and release.failed_attempt.attempt == attempt
    assert burst.apply(plan) == "applied"
    assert burst.attempts()[INSTANCE].failures == attempt
    assert not burst.instance_live()


def provision_again(burst: Burst, later: float, attempt: str) -> None:
    """A new instance, which its release will count as a failure of its own: it is told
    from the one released before, even when both were made within one second (a cloud's
    instances are minutes apart; a test's are not — the cause of a flaky count)."""
    plan = burst.plan(later)
    create = only(plan)
    assert create.id == f"create:{INSTANCE}" and attempt in create.reason, create.reason
    assert burst.apply(plan) == "applied"
    assert burst.instance_live()
    desired = burst.site.desired()
    made = gather(desired, burst.site.workdir).supply.entries[INSTANCE]
    assert instance_identity(made) != burst.attempts()[INSTANCE].instance


@pytest.fixture
def burst(site: Site) -> Burst:
    world = Burst(site)
    world.write()
    report = site.apply(FreshPlan(), allow_destroy=True)  # the host expected, its instance
    assert (report.result, report.counts()["done"]) == ("applied", 2)
    return world


def test_a_host_that_never_joins_backs_off_then_gives_up(
        burst: Burst, capsys: pytest.CaptureFixture[str]) -> None:
    fail_attempt(burst, 1)
    site = burst.site  # within the backoff, xce-plan (asking the same store) waits
    argv = ["--desired", str(site.desired_file), "--workdir", str(site.workdir),
            "--state", site.target.url, "--format", "json"]
    assert plan_cli.main(argv) == 0, "only pending: nothing to apply"
    pending = orjson.loads(capsys.readouterr().out)["pending"]
    assert [n["entry"] for n in pending] == [INSTANCE]
    assert "attempt 2 of 3 (backoff 15 minutes after 1 failure)" in pending[0]["reason"]
    provision_again(burst, later=15 * 60 + 5, attempt="attempt 2 of 3")
    fail_attempt(burst, 2)  # its own deadline: released 2 deadlines after it was made
    provision_again(burst, later=30 * 60 + 5, attempt="attempt 3 of 3")
    fail_attempt(burst, 3)
    gave_up = burst.plan(later=30 * 86400)
    assert gave_up.actions == ()
    [note] = [n.reason for n in gave_up.drift_reported if n.entry == INSTANCE]
    assert "gave up after 3 attempts whose host never joined" in note


def test_the_host_joining_resets_the_count(burst: Burst) -> None:
    fail_attempt(burst, 1)
    provision_again(burst, later=15 * 60 + 5, attempt="attempt 2 of 3")
    burst.report("join")
    burst.report("available")
    joined = burst.plan(later=0)
    assert joined.actions == ()
    assert dict(joined.attempts_reset) == {INSTANCE: burst.attempts()[INSTANCE].instance}
    assert burst.apply(joined) == "applied"
    assert burst.attempts() == {}


def test_a_release_that_failed_is_not_counted_twice(
        burst: Burst, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = burst.plan(later=2 * DEADLINE)
    monkeypatch.setenv("XCE_SIM_FAIL", "delete")  # the cloud refuses to release it
    assert burst.apply(plan, retry=RetryPolicy(retries=0)) == "failed"
    recorded = burst.attempts()[INSTANCE]
    assert recorded.failures == 1 and burst.instance_live()
    monkeypatch.delenv("XCE_SIM_FAIL")
    fail_attempt(burst, 1)  # the same instance released again: still the first failure
    assert burst.attempts()[INSTANCE] == recorded


def test_a_new_template_is_tried_at_once_and_the_count_forgotten(burst: Burst) -> None:
    fail_attempt(burst, 1)
    burst.write(template="t2")  # a fixed image: the failure of t1 does not count
    plan = burst.plan(later=0)
    [create] = [a for a in plan.actions if a.entry == INSTANCE]
    assert create.verb == "create" and "not counted" in create.reason, create.reason
    assert INSTANCE in plan.attempts_reset
    assert burst.apply(plan) == "applied"
    assert burst.attempts() == {}


def test_instances_made_within_one_second_are_told_apart(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cause of a flaky count: the simulated cloud stamped ``since`` in whole seconds, so
    an instance made, released and made again within one second (as this file's tests do,
    on an idle machine) was the same instance to the backoff: its release counted the
    previous attempt again. The real cloud's instances are a join deadline apart."""
    monkeypatch.chdir(tmp_path)  # the simulator keeps its account in its working folder
    entry = {"id": INSTANCE, "kind": "instance", "state": "available", "source": "provisioned",
             "provider": "cloud", "spec": {"template": "t1"}}
    made = []
    for n in (1, 2):
        reply = handle("cloud", Request("create", f"create-{n}", 1, OWNER, {"entry": entry}))
        made.append(Entry.from_json(reply.result["entry"]))
        assert handle("cloud", Request("delete", f"delete-{n}", 1, OWNER,
                                       {"id": INSTANCE, "entry": entry})).ok
    assert instance_identity(made[0]) != instance_identity(made[1])
