"""A small site for apply tests: one slow, deduplicating exec provider in a temp folder.

Every test that takes ``site`` runs against real SQLite and real PostgreSQL (the state
engineer's ``target`` fixture, imported as is).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from compiler.contract.build_files import STATE_FILE
from compiler.contract.supply_map import Entry, SupplyMap
from reconciler.apply import ApplyOptions, ApplyReport, FreshPlan, RetryPolicy, apply
from reconciler.pipeline import Desired, gather, load_desired, plan_for
from reconciler.plan.file import SavedPlan, Seal, save_plan
from reconciler.plan.model import Plan
from reconciler.review.origin import origin_here
from reconciler.state import StateStore
from tests.apply.events import Gate
from tests.state.conftest import pg_admin, pg_target, sqlite_target, target  # noqa: F401
from tests.state.targets import Target

SCRIPT = Path(__file__).with_name("slow_provider.py")
OWNER = "site/test"
FAST_RETRY = RetryPolicy(retries=3, delay=0.01, max_delay=0.02)


def volume(name: str, **spec: Any) -> Entry:
    return Entry(f"volume/{name}", "volume", "available", "config", "slow", amount=1 << 30,
                 spec={"path": f"/shared/{name}", **spec}, owner=OWNER)


def user_dir(vol: str, user: str) -> Entry:
    return Entry(f"volume-dir/{vol}/{user}", "volume-dir", "available", "config", "slow",
                 spec={"mode": "0700", "owner": user}, owner=OWNER)


def pool(name: str) -> Entry:
    return Entry(f"storage-pool/{name}", "storage-pool", "available", "config", "slow",
                 amount=1 << 40, owner=OWNER)


def pool_quota(pool_name: str, user: str) -> Entry:
    return Entry(f"quota/{pool_name}/user/{user}", "quota", "available", "config", "slow",
                 location=f"pool/{pool_name}", amount=1 << 30,
                 spec={"scope": "user", "subject": user}, owner=OWNER)


def volume_site(volumes: int = 2, users: int = 3) -> list[Entry]:
    """``volumes`` volumes with ``users`` user directories each (each dir waits for its volume)."""
    out: list[Entry] = []
    for v in range(1, volumes + 1):
        out.append(volume(f"v{v}"))
        out.extend(user_dir(f"v{v}", f"u{u:02d}") for u in range(1, users + 1))
    return out


@dataclass
class Site:
    root: Path
    target: Target
    planned_at: float = 0.0  # the clock of the last plan made (a saved plan records it)
    gate: Gate | None = None  # held calls wait until it opens (``let_go``)

    @property
    def home(self) -> Path:
        return self.root / "provider"

    @property
    def desired_file(self) -> Path:
        return self.root / "build" / "supply-map.json"

    @property
    def workdir(self) -> Path:
        return self.root / ".xce"

    def write(self, entries: Sequence[Entry], *, protected: Sequence[str] = (),
              delay: float = 0.0, providers: dict[str, Any] | None = None) -> None:
        """The desired map and bindings (as xce-compile writes them) and the provider's config.

        ``providers`` replaces the bindings (default: the slow exec provider ``slow``).
        """
        settings = {"owner": OWNER, "safety": {"min_entries": 1000},
                    "protected": list(protected)}
        supply = SupplyMap({e.id: e for e in entries}, site="test", owner=OWNER,
                           revision="0123456789abcdef", settings=settings)
        slow = {"kind": "exec", "command": [sys.executable, str(SCRIPT), str(self.home)],
                "timeout": 30}
        bindings = {"providers": {"slow": slow} if providers is None else providers}
        self.desired_file.parent.mkdir(parents=True, exist_ok=True)
        self.desired_file.write_bytes(supply.dumps())
        (self.desired_file.parent / "bindings.json").write_bytes(orjson.dumps(bindings))
        self.home.mkdir(parents=True, exist_ok=True)
        self.configure(delay=delay)

    def configure(self, *, delay: float = 0.0, slow: dict[str, float] | None = None,
                  hold: Sequence[str] = ()) -> None:
        """Per-call delays; calls for ``hold`` entries wait until ``let_go()``."""
        if hold and self.gate is None:  # closed before any call can see the hold
            self.gate = Gate(self.home / "gate")
        doc = {"delay": delay, "slow": slow or {}, "hold": list(hold)}
        (self.home / "config.json").write_text(orjson.dumps(doc).decode())

    def let_go(self) -> None:
        if self.gate is not None:
            self.gate.open()

    def fault(self, entry: str, code: str, times: int, *, after: bool = False) -> None:
        """Make the next ``times`` calls for ``entry`` fail with ``code`` (``after``: the
        provider makes the change first, and only its reply is the failure)."""
        self.faults(entry, [(code, times, after)])

    def faults(self, entry: str, sequence: Sequence[tuple[str, int, bool]]) -> None:
        """Faults of ``entry`` served in order: each (code, times, after) as in ``fault``."""
        doc = [{"code": c, "times": t, "after": a} for c, t, a in sequence]
        (self.home / "faults.json").write_text(orjson.dumps({entry: doc}).decode())

    def seed(self, entries: Sequence[Entry], epoch: int = 0) -> None:
        """Put entries into the provider as if an earlier apply had made them."""
        state = self.provider_state()
        state["entries"].update({e.id: e.to_json() for e in entries})
        state["epoch"] = max(state["epoch"], epoch)
        (self.home / "state.json").write_text(orjson.dumps(state).decode())

    def provider_state(self) -> dict[str, Any]:
        path = self.home / "state.json"
        if not path.exists():
            return {"entries": {}, "ops": {}, "epoch": 0, "gen": 0}
        doc: dict[str, Any] = orjson.loads(path.read_bytes())
        return doc

    def executed(self) -> list[str]:
        """Entry ids of every effective change, in order (a deduplicated repeat is not one)."""
        return self._log("executed.log", 2)

    def calls(self) -> list[str]:
        """Entry ids of every mutating call the provider received, repeats included."""
        return self._log("calls.log", 4)

    def call_ops(self, entry: str) -> list[str]:
        """The op_ids of the mutating calls for ``entry``, in order."""
        return [op for op, called in zip(self._log("calls.log", 2), self.calls(), strict=True)
                if called == entry]

    def _log(self, name: str, column: int) -> list[str]:
        path = self.home / name
        lines = path.read_text().splitlines() if path.exists() else []
        return [line.split()[column] for line in lines]

    def desired(self) -> Desired:
        return load_desired(None, self.desired_file)

    def plan(self, *, destroy: bool = False) -> Plan:
        desired = self.desired()
        self.planned_at = time.time()
        return plan_for(desired, gather(desired, self.workdir), now=self.planned_at,
                        destroy=destroy, force=True)

    def save(self, plan: Plan, *, destroy: bool = False) -> Path:
        """Saved as xce-plan --desired FILE --state URL saves it (``cli_args``): signed
        with the store's key, at the clock of the last plan made."""
        path = self.root / "plan.json"
        with self.store() as store:
            origin = origin_here(None, self.desired_file, self.workdir,
                                 existed=self.workdir.is_dir(), beside=False, store=store,
                                 default_store=self.workdir / STATE_FILE, option=self.target.url)
            seal = Seal(store.plan_key(), self.planned_at or time.time())
        save_plan(path, plan, destroy=destroy, origin=origin, seal=seal)
        return path

    @contextmanager
    def store(self) -> Iterator[StateStore]:
        with self.target.open() as opened:
            yield opened

    def apply(self, source: Plan | FreshPlan, *, destroy: bool = False,
              **options: Any) -> ApplyReport:
        """Apply in this process (a Plan is applied as a saved plan with ``destroy``)."""
        chosen = SavedPlan(source, destroy) if isinstance(source, Plan) else source
        opts = ApplyOptions(**{"retry": FAST_RETRY, **options})
        with self.store() as store:
            return apply(self.desired(), chosen, store, self.workdir, opts)

    def cli_args(self, *args: str) -> list[str]:
        return [*args, "--desired", str(self.desired_file), "--state", self.target.url,
                "--retry-delay", "0.01"]


@pytest.fixture
def site(tmp_path: Path, target: Target) -> Site:  # noqa: F811 - the imported fixture
    return Site(tmp_path, target)
