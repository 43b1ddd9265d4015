"""What the check of a saved plan against its config lets through: the plans xce-plan makes.

A plan for some ``--target``s is a part of the config's plan; drift outside the plan only
adds actions it does not have; a resumed apply is not checked again (its own changes are
no longer in the config's plan). The slow exec provider, real stores, real plan files.
"""

from __future__ import annotations

import json

import pytest

from reconciler.cmds import apply as apply_cli
from reconciler.pipeline import gather, plan_for
from tests.apply.conftest import Site, user_dir, volume, volume_site


def _applied(site: Site, capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, int]:
    capsys.readouterr()
    code = apply_cli.main(site.cli_args(*args, "--format", "json"))
    out, err = capsys.readouterr()
    assert code == 0, err + out
    counts: dict[str, int] = json.loads(out)["counts"]
    return counts


def test_a_plan_for_some_targets_applies(site: Site,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    site.write(volume_site(volumes=2, users=2))
    desired = site.desired()
    site.planned_at = 1.0e9 + 1  # any clock: nothing here depends on it
    plan = plan_for(desired, gather(desired, site.workdir), now=site.planned_at,
                    targets=["volume-dir/v1/*"], force=True)
    assert {a.entry for a in plan.actions} == {"volume/v1", "volume-dir/v1/u01",
                                               "volume-dir/v1/u02"}
    assert _applied(site, capsys, str(site.save(plan)))["done"] == 3


def test_drift_outside_the_plan_is_no_refusal(site: Site,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """An entry the plan does not touch appears meanwhile: the config's plan now has more
    actions (creating the missing one is not among them: someone made it); still, each of
    the saved plan's actions is one of them."""
    site.write([volume("v1"), user_dir("v1", "u01"), volume("v2")])
    site.seed([volume("v2")])
    plan_file = site.save(site.plan())
    site.seed([volume("v2", path="/moved")])  # not fingerprinted: the plan does not touch it
    assert _applied(site, capsys, str(plan_file))["done"] == 2


def test_a_resumed_plan_is_not_checked_again(site: Site,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """The first run applied part of the plan: the config's plan no longer has those
    actions, which must not make the rest of the plan 'not what its config asks'."""
    site.write(volume_site(volumes=1, users=2))
    plan_file = site.save(site.plan())
    site.fault("volume-dir/v1/u02", "INVALID_ARGUMENT", 1)
    capsys.readouterr()
    assert apply_cli.main(site.cli_args(str(plan_file))) == 1
    counts = _applied(site, capsys, str(plan_file))
    assert (counts["done"], counts["already-done"]) == (1, 2)
