"""Loading a scenario folder (desired.json, live.json, expected.json) and planning it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from compiler.contract.supply_map import SupplyMap
from reconciler.plan.attempts import ProvisionAttempts
from reconciler.plan.model import Plan
from reconciler.plan.origin import Origin, PlannedStore
from reconciler.planner import make_plan
from reconciler.state.times import to_time

SCENARIOS = Path(__file__).parent / "scenarios"
# where a plan saved by these tests says it was made (its content is never applied)
ORIGIN = Origin("/srv/site-repo", "site", None, "site/.xce", True,
                PlannedStore("0123456789abcdef0123456789abcdef", "site/.xce/state.sqlite"), True)


def scenario_names() -> list[str]:
    return sorted(p.name for p in SCENARIOS.iterdir() if (p / "expected.json").exists())


def load_json(path: Path) -> Any:
    return orjson.loads(path.read_bytes())


def load_maps(name: str) -> tuple[SupplyMap, SupplyMap, dict[str, Any]]:
    folder = SCENARIOS / name
    desired = SupplyMap.from_json(load_json(folder / "desired.json"))
    live = SupplyMap.from_json(load_json(folder / "live.json"))
    return desired, live, load_json(folder / "expected.json")


def attempts_of(args: dict[str, Any]) -> dict[str, ProvisionAttempts]:
    """``args.attempts``: what the state store recorded, entry -> {failures, failed_at
    (seconds), template, instance}."""
    return {entry: ProvisionAttempts(entry, doc["failures"], to_time(doc["failed_at"]),
                                     doc["template"], doc["instance"])
            for entry, doc in args.get("attempts", {}).items()}


def plan_scenario(name: str) -> tuple[Plan, dict[str, Any]]:
    desired, live, expected = load_maps(name)
    args = expected.get("args", {})
    plan = make_plan(desired, live, now=args["now"], targets=args.get("targets", ()),
                     destroy=args.get("destroy", False), force=args.get("force", False),
                     attempts=attempts_of(args))
    return plan, expected
