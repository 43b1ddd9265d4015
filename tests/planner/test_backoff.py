"""Provisioning backoff (P6): the settings, the waits, and what the plan hands to the apply
(``failed_attempt``, ``attempts_reset``) surviving the plan file exactly. The planning
itself is in the ``provision_*`` scenarios; recording and forgetting with real parts in
tests/apply/test_apply_provision_backoff.py."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from compiler.compile import compile_site
from compiler.contract.settings import ProvisioningPolicy
from compiler.core.problems import Problems, UserError
from reconciler.plan.file import load_plan, save_plan
from reconciler.plan.model import Plan
from reconciler.planner import make_plan
from reconciler.planner.settings import read_settings
from tests.planner.scenario_io import ORIGIN, attempts_of, load_maps, plan_scenario

OWNER = "site/t"


def _compiled_settings(tmp_path: Path, provisioning: str) -> dict[str, object]:
    (tmp_path / "site.yaml").write_text(f"version: 1\nsite:\n  name: t\n{provisioning}")
    problems = Problems()
    compiled, _ = compile_site(tmp_path, problems)
    assert compiled is not None, [p.message for p in problems]
    return dict(compiled.supply_map.settings)


def test_site_provisioning_is_emitted_only_when_written(tmp_path: Path) -> None:
    plain = _compiled_settings(tmp_path, "")
    assert "provisioning" not in plain  # existing maps keep their digest
    assert read_settings(plain).provisioning == ProvisioningPolicy(3, 900, 21600)
    written = _compiled_settings(tmp_path, "  provisioning: {attempts: 5, backoff: 10m}\n")
    assert written["provisioning"] == {"attempts": 5, "backoff": 600}
    assert read_settings(written).provisioning == ProvisioningPolicy(5, 600, 21600)


def test_the_wait_doubles_per_failure_up_to_the_longest() -> None:
    policy = ProvisioningPolicy(attempts=10, backoff=900, max_backoff=6 * 3600)
    assert [policy.wait(n) for n in range(1, 8)] == [
        900, 1800, 3600, 7200, 14400, 21600, 21600]
    assert ProvisioningPolicy(backoff=0).wait(3) == 0  # no backoff: only the limit


@pytest.mark.parametrize(("provisioning", "subject", "says"), [
    ({"attempts": 0}, "settings.provisioning.attempts", "whole number ≥ 1, got 0"),
    ({"attempts": 2.5}, "settings.provisioning.attempts", "whole number ≥ 1"),
    ({"attempts": True}, "settings.provisioning.attempts", "whole number ≥ 1"),
    ({"backoff": "15m"}, "settings.provisioning.backoff", "non-negative number"),
    ({"max_backoff": -1}, "settings.provisioning.max_backoff", "non-negative number"),
    ({"attempt": 3}, "settings.provisioning.attempt", "no key 'attempt'"),
    (3, "settings.provisioning", "must map attempts, backoff, max_backoff"),
])
def test_a_bad_provisioning_in_a_saved_map_is_a_setting_problem(
        provisioning: object, subject: str, says: str) -> None:
    with pytest.raises(UserError) as err:
        read_settings({"owner": OWNER, "provisioning": provisioning})
    [problem] = err.value.problems
    assert (problem.code, problem.subject) == ("XCE755", subject)
    assert says in problem.message


@pytest.mark.parametrize("name", ["provision_backoff_retry", "provision_template_changed"])
def test_what_the_apply_records_survives_the_plan_file(tmp_path: Path, name: str) -> None:
    plan, _ = plan_scenario(name)
    assert any(a.failed_attempt for a in plan.actions) or plan.attempts_reset
    save_plan(tmp_path / "plan.json", plan, destroy=True, origin=ORIGIN)
    assert load_plan(tmp_path / "plan.json").plan == plan
    assert Plan.from_json(plan.to_json()).to_json() == plan.to_json()


def test_a_plan_without_attempts_reads_as_before() -> None:
    """The new keys appear only when set, so other plans (and their digests) are unchanged."""
    plan, _ = plan_scenario("instances")
    doc = plan.to_json()
    assert "attempts_reset" not in doc
    assert all("failed_attempt" not in a for a in doc["actions"])


def test_a_reprovision_resting_on_an_unknown_host_waits() -> None:
    """Whether the host joined since decides a retry: with the controller map silent, the
    create that a record rests on is unknown, not planned."""
    desired, live, expected = load_maps("provision_backoff_retry")
    silent = replace(live, unknown={"ctl": "timed out"},
                     entries={k: e for k, e in live.entries.items() if e.provider != "ctl"})
    plan = make_plan(desired, silent, now=expected["args"]["now"],
                     attempts=attempts_of(expected["args"]))
    assert "create:instance/b01" not in {a.id for a in plan.actions}
    [why] = [n.reason for n in plan.unknown if n.entry == "instance/b01"]
    assert "host/b01" in why and "timed out" in why
