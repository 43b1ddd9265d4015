"""Findings are the planner's decisions, classified: each action and each reported entry of
the plan is one finding, with the desired value beside the live one per field, and the
command that corrects it when the plan does. Pending entries are not drift."""

from __future__ import annotations

from typing import Any

from compiler.contract.supply_map import Entry, SupplyMap
from compiler.core.secrets import Redactor
from reconciler.drift.detect import Fixer, findings
from reconciler.drift.model import Category, FieldDiff, Finding
from reconciler.planner import make_plan

OWNER = "site/t"
FIXER = Fixer(("my-site",))


def e(entry_id: str, provider: str, state: str = "available", **kw: Any) -> Entry:
    kw.setdefault("source", "config")
    kw.setdefault("owner", OWNER)
    return Entry(entry_id, entry_id.partition("/")[0], state, provider=provider, **kw)


DESIRED = (
    e("host/h1", "ctl"),
    e("volume-dir/v/u1", "fs", spec={"mode": "0700", "owner": "u1"}),
    e("volume-dir/v/u2", "fs", spec={"mode": "0700", "owner": "u2"}),
    e("quota/v/user/a", "fs", amount=15),
    e("instance/i1", "cloud", source="provisioned", spec={"template": "t1"}),
    e("storage-pool/p", "ctl", amount=5),
)
LIVE = (
    e("host/h1", "ctl", "drained"),  # an admin drained it
    e("volume-dir/v/u1", "fs", spec={"mode": "0755", "owner": "u1"}),
    e("quota/v/user/a", "fs", amount=10),
    e("counter/slots@site", "ctl", amount=4),  # ours, no longer in config: deleted
    e("volume-dir/v/u3", "fs", spec={"mode": "0700", "owner": "u3"}),  # users' data: kept
    e("license/l@site", "ctl", amount=2, owner="site/other"),
    e("host/h9", "ctl", "draining"),  # leaving, its jobs finish: pending, not drift
)
SETTINGS = {"management": {"quota": "report"}, "join_deadline": 600}


def found(**unknown: str) -> dict[str, Finding]:
    desired = SupplyMap({x.id: x for x in DESIRED}, owner=OWNER, settings=SETTINGS)
    live = SupplyMap({x.id: x for x in LIVE if x.provider not in unknown}, owner=OWNER,
                     unknown=unknown,
                     unknown_entries={"storage-pool/p": "reported by providers 'ctl' and 'b'"})
    plan = make_plan(desired, live, now=1000.0)
    return {f.entry: f for f in findings(plan, desired, live, FIXER, Redactor())}


def test_each_decision_is_one_finding_of_its_category() -> None:
    got = {entry: f.category for entry, f in found(cloud="timed out after 20 s").items()}
    assert got == {
        "host/h1": Category.NOT_CORRECTED,
        "volume-dir/v/u1": Category.DIFFERS,
        "volume-dir/v/u2": Category.MISSING,
        "quota/v/user/a": Category.NOT_CORRECTED,
        "counter/slots@site": Category.EXTRA,
        "volume-dir/v/u3": Category.ORPHAN,
        "license/l@site": Category.CO_MANAGED,
        "provider/cloud": Category.UNKNOWN,
        "storage-pool/p": Category.UNKNOWN,
    }


def test_desired_stands_beside_live_per_field() -> None:
    got = found()
    assert got["volume-dir/v/u1"].fields == (FieldDiff("spec.mode", "0700", "0755"),)
    # not corrected, yet shown field by field through the planner's own comparison
    assert got["quota/v/user/a"].fields == (FieldDiff("amount", 15, 10),)
    assert "management of quota: report" in got["quota/v/user/a"].reason
    assert got["host/h1"].fields == (FieldDiff("state", "available", "drained"),)
    missing = got["volume-dir/v/u2"]
    assert (missing.desired_state, missing.live_state, missing.fields) == ("available", None, ())


def test_the_fix_is_the_plan_of_just_that_entry_and_only_where_the_plan_corrects() -> None:
    got = found()
    assert got["volume-dir/v/u1"].fix == (
        "xce-plan my-site --target volume-dir/v/u1 --out drift-fix.plan "
        "&& xce-apply drift-fix.plan")
    assert got["counter/slots@site"].fix == (
        "xce-plan my-site --target counter/slots@site --out drift-fix.plan "
        "&& xce-apply --allow-destroy drift-fix.plan")
    for entry in ("host/h1", "quota/v/user/a", "volume-dir/v/u3", "license/l@site"):
        assert got[entry].fix is None, entry
    assert Fixer(("--desired", "b/supply map.json")).command(
        make_plan(SupplyMap({}, owner=OWNER), SupplyMap({"counter/c@site": e(
            "counter/c@site", "ctl")}, owner=OWNER), now=0).actions[0]
    ).startswith("xce-plan --desired 'b/supply map.json' --target counter/c@site")


def test_an_unknown_provider_is_one_finding_never_absent() -> None:
    got = found(cloud="timed out after 20 s")
    silent = got["provider/cloud"]
    assert (silent.count, silent.provider, silent.kind) == (1, "cloud", "provider")
    assert "timed out after 20 s" in silent.reason
    assert "instance/i1" not in got  # its entry is neither missing nor anything else
    contested = got["storage-pool/p"]
    assert "reported by providers 'ctl' and 'b'" in contested.reason


def test_pending_entries_are_not_drift() -> None:
    assert "host/h9" not in found()


def test_secret_values_are_masked_by_key_and_by_value() -> None:
    token = "tok-2b7e-secret"
    desired = SupplyMap({"host/h": e("host/h", "ctl", attributes={"rack": "r1"})}, owner=OWNER)
    live = SupplyMap({"host/h": e("host/h", "ctl", attributes={
        "rack": f"r1 {token}", "api_token": token})}, owner=OWNER)
    plan = make_plan(desired, live, now=0)
    (finding,) = findings(plan, desired, live, FIXER, Redactor((token,)))
    assert finding.fields == (FieldDiff("attributes.api_token", None, "(sensitive)"),
                              FieldDiff("attributes.rack", "r1", "r1 (sensitive)"))
