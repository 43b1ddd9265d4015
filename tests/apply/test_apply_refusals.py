"""Plans that must not run: stale (exit 3, naming the entries), for another config, blocked."""

from __future__ import annotations

import json
from dataclasses import replace

import orjson
import pytest

from compiler.core.problems import Problem, UserError
from reconciler.apply import FreshPlan, Status
from reconciler.cmds import apply as apply_cli
from reconciler.pipeline import gather
from reconciler.plan.file import fingerprint
from reconciler.plan.model import Plan
from tests.apply.conftest import Site, user_dir, volume, volume_site


def test_stale_plan_exits_3_naming_the_changed_entries(site: Site,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    site.write(volume_site(volumes=2, users=1))
    plan_file = site.save(site.plan())
    # someone else made volume/v2 and changed nothing else, after the plan
    site.seed([volume("v2", path="/elsewhere")])
    assert apply_cli.main(site.cli_args(str(plan_file))) == 3
    out = capsys.readouterr().out
    assert "Refused plan" in out and "XCE822: volume/v2 changed since the plan was made" in out
    assert "volume/v1" not in out
    assert site.calls() == []
    assert apply_cli.main(site.cli_args(str(plan_file), "--format", "json")) == 3
    doc = json.loads(capsys.readouterr().out)
    assert (doc["result"], doc["exit_code"]) == ("stale", 3)
    assert [p["subject"] for p in doc["stale"]] == ["volume/v2"]


def test_entries_the_plan_relied_on_are_checked_too(site: Site,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """An action may rest on other entries' live state (an instance is released because its
    host never joined): the plan fingerprints them, and a change to one makes the plan stale,
    whether the desired map names its provider (volume/v2) or not (volume/v9)."""
    site.write(volume_site(volumes=2, users=0))
    site.seed([volume("v2")])
    plan = site.plan()
    assert [a.entry for a in plan.actions] == ["volume/v1"]

    def relying(plan: Plan) -> Plan:
        live = gather(site.desired(), site.workdir).supply.entries
        relied = {e: fingerprint(live.get(e)) for e in ("volume/v2", "volume/v9")}
        return replace(plan, fingerprints={**plan.fingerprints, **relied})

    plan_file = site.save(relying(plan))
    site.seed([volume("v2", path="/elsewhere"), volume("v9")])
    assert apply_cli.main(site.cli_args(str(plan_file), "--format", "json")) == 3
    doc = json.loads(capsys.readouterr().out)
    assert [p["subject"] for p in doc["stale"]] == ["volume/v2", "volume/v9"]
    assert site.calls() == []
    # made again against this live map (v2 back to its path, v9 left alone), it applies
    assert apply_cli.main(site.cli_args(str(site.save(relying(site.plan()))))) == 0
    assert sorted(site.executed()) == ["volume/v1", "volume/v2"]


def test_plan_for_another_config_is_stale(site: Site,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    site.write(volume_site(volumes=1, users=1))
    plan_file = site.save(site.plan())
    site.write([*volume_site(volumes=1, users=1), user_dir("v1", "u09")])
    assert apply_cli.main(site.cli_args(str(plan_file))) == 3
    assert "XCE821" in capsys.readouterr().out
    assert site.calls() == []


def test_provider_that_cannot_report_means_the_plan_cannot_be_checked(
        site: Site, capsys: pytest.CaptureFixture[str]) -> None:
    site.write(volume_site(volumes=1, users=0))
    plan_file = site.save(site.plan())
    bindings = site.desired_file.parent / "bindings.json"
    doc = orjson.loads(bindings.read_bytes())
    doc["providers"]["slow"]["command"] = ["/nonexistent/provider"]
    bindings.write_bytes(orjson.dumps(doc))
    assert apply_cli.main(site.cli_args(str(plan_file))) == 1
    err = capsys.readouterr().err
    assert "XCE823" in err and "provider 'slow' did not report its inventory" in err


def test_plan_blocked_by_a_guard_is_refused(site: Site) -> None:
    site.write(volume_site(volumes=1, users=0))
    guard = Problem("XCE750", "the plan has too many actions", subject="plan")
    plan = replace(site.plan(), problems=(guard,))
    with pytest.raises(UserError) as caught:
        site.apply(plan)
    assert [p.code for p in caught.value.problems] == ["XCE824", "XCE750"]
    assert site.calls() == []


def test_plan_with_a_dependency_cycle_is_refused(site: Site) -> None:
    site.write(volume_site(volumes=1, users=1))
    plan = site.plan()
    first, second = plan.actions
    looped = Plan(actions=(replace(first, depends_on=(second.id,)), second),
                  desired_digest=plan.desired_digest, fingerprints=plan.fingerprints)
    with pytest.raises(UserError) as caught:
        site.apply(looped)
    (problem,) = caught.value.problems
    assert problem.code == "XCE825" and "cycle among 2 actions" in problem.message


def test_dependency_outside_the_plan_is_refused(site: Site) -> None:
    site.write(volume_site(volumes=1, users=0))
    plan = site.plan()
    broken = replace(plan, actions=(replace(plan.actions[0], depends_on=("create:nothing",)),))
    with pytest.raises(UserError) as caught:
        site.apply(broken)
    assert "depends on create:nothing, which is not in the plan" in str(caught.value)


def test_action_of_an_unbound_provider_fails_alone(site: Site) -> None:
    site.write([volume("v1"), replace(volume("x"), provider="nowhere")])
    report = site.apply(FreshPlan(force=True))
    by_entry = {o.action.entry: o for o in report.outcomes}
    assert by_entry["volume/v1"].status is Status.DONE
    assert (by_entry["volume/x"].status, by_entry["volume/x"].code) == (Status.FAILED, "XCE838")
    assert "provider 'nowhere' is not bound" in by_entry["volume/x"].message
    assert report.exit_code == 1
    # a saved plan with such an action cannot even be checked against the live map
    with pytest.raises(UserError) as caught:
        site.apply(site.plan())
    assert caught.value.problems[0].code == "XCE823"


def test_usage_mistakes_are_errors_not_tracebacks(site: Site,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    site.write(volume_site(volumes=1, users=0))
    assert apply_cli.main([str(site.root)]) == 1
    assert "XCE820" in capsys.readouterr().err  # a site without --auto-approve
    assert apply_cli.main([]) == 1
    assert "nothing to apply" in capsys.readouterr().err
    plan_file = site.save(site.plan())
    assert apply_cli.main(site.cli_args(str(plan_file), "--force")) == 1
    assert "XCE820" in capsys.readouterr().err
    assert apply_cli.main([str(site.root / "missing.json"), "--desired",
                           str(site.desired_file)]) == 1
    assert "XCE760" in capsys.readouterr().err
    assert apply_cli.main(["--parallelism", "0"]) == 1
    assert "XCE820" in capsys.readouterr().err
    # a lease of 0 s (or less) is expired when taken; inf and nan are no durations
    for option, value in [("--lock-ttl", "0"), ("--lock-ttl", "-5"), ("--lock-ttl", "inf"),
                          ("--lock-timeout", "nan"), ("--retry-delay", "-1")]:
        assert apply_cli.main([str(plan_file), option, value]) == 1, (option, value)
        assert f"argument {option}: invalid" in capsys.readouterr().err
    assert site.calls() == []
