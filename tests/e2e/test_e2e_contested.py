"""An id two providers report, end to end: from a live-map snapshot that lists it in
``unknown_entries`` (as a gather writes it), ``xce-plan`` plans nothing for it and exits 1,
like for a provider that did not report — the plan is incomplete."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

import reconciler.cmds.plan as plan_cli
from reconciler.pipeline import compile_desired
from tests.e2e.workspace import SCENARIOS, SITES, materialize


def test_a_contested_entry_in_a_snapshot_is_unknown_and_fails_the_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = materialize(tmp_path / "site", SITES / "base", SCENARIOS / "fresh_site" / "site-config")
    desired = compile_desired(site).supply
    providers = sorted({e.provider for e in desired.entries.values() if e.provider})
    why = "reported by providers 'controller' and 'cloud', so neither report is trusted"
    snapshot = {"owner": desired.owner, "site": desired.site, "entries": [],
                "generations": dict.fromkeys(providers, 1),  # new providers: no guard
                "unknown_entries": {"host/cn01": why, "host/zz99": why}}
    live = tmp_path / "live.json"
    live.write_bytes(orjson.dumps(snapshot))
    args = [str(site), "--workdir", str(tmp_path / "work"), "--live", str(live)]

    assert plan_cli.main([*args, "--format", "json"]) == 1
    plan = orjson.loads(capsys.readouterr().out)
    reasons = {n["entry"]: n["reason"] for n in plan["unknown"]}
    assert sorted(reasons) == ["host/cn01", "host/zz99"]  # the live-only id is listed too
    assert all(why in r for r in reasons.values())
    acted = {a["entry"] for a in plan["actions"]}
    assert "host/cn01" not in acted and "host/cn02" in acted  # the rest is planned
    del snapshot["unknown_entries"]  # the control: the same world with nothing contested
    live.write_bytes(orjson.dumps(snapshot))
    assert plan_cli.main(args) == 2
