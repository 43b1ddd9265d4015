"""Sites that crash tests apply again and again with a REAL ``xce-apply`` process.

Each knows how to start the apply, how to ask ``xce-plan`` whether anything is left, and
which op_ids its providers applied (their ledgers), so a test can check that every op of
the plan was applied exactly once.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import reconciler.cmds.plan as plan_cli
from reconciler.apply.ops import op_id, plan_digest
from reconciler.plan.file import load_plan
from tests.apply.conftest import Site, volume_site
from tests.apply.events import Doorbell
from tests.conftest import EXAMPLE_SITE

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Crashing:
    """One site to apply again and again: how to start ``xce-apply``, what its ledgers hold."""

    argv: list[str]  # xce-apply's arguments after the module
    plan_file: Path
    plan_argv: list[str]  # xce-plan's, to check that nothing is left to do
    ledger: Callable[[], list[str]]  # every op_id the providers have applied, repeats kept

    def ops(self) -> tuple[str, set[str]]:
        """The plan's digest and the op_id of each of its actions."""
        plan = load_plan(self.plan_file).plan
        digest = plan_digest(plan)
        return digest, {op_id(digest, a) for a in plan.actions}


def example_ledger(workdir: Path) -> list[str]:
    """Every op_id the example's providers have applied, repeats kept: the built-ins' op
    ledgers, the controller map's, and the simulated cloud's (an exec provider)."""
    providers = workdir / "providers"
    found: list[str] = []
    for db in [*providers.glob("*/opledger.sqlite"), providers / "controller" / "map.sqlite"]:
        with closing(sqlite3.connect(db)) as conn:
            found += [row[0] for row in conn.execute("SELECT op_id FROM ops")]
    for state in providers.glob("*/state.json"):
        found += json.loads(state.read_text())["ops"]
    return found


def example_site(site: Site) -> Crashing:
    """The example site, copied, with its built-in providers (state under the copy)."""
    root = site.root / "site"
    shutil.copytree(EXAMPLE_SITE, root, ignore=shutil.ignore_patterns(".xce"))
    plan_file = site.root / "plan.json"
    common = ["--state", site.target.url]
    assert plan_cli.main([str(root), "--out", str(plan_file), *common]) == 2

    return Crashing([str(plan_file), "--site", str(root), *common], plan_file,
                    [str(root), *common], lambda: example_ledger(root / ".xce"))


def exec_site(site: Site) -> Crashing:
    """An exec provider whose process runs on when the runner is killed mid-call."""
    site.write(volume_site(volumes=3, users=8), delay=0.05)
    plan_file = site.save(site.plan())
    common = ["--desired", str(site.desired_file), "--state", site.target.url]
    return Crashing(site.cli_args(str(plan_file)), plan_file, common,
                    lambda: list(site.provider_state()["ops"]))


def start_apply(argv: list[str], log: Path, bell: Doorbell | None = None
                ) -> subprocess.Popen[str]:
    """Progress (a line per action) goes to ``log``: a pipe nobody reads would fill up;
    with a ``bell``, each line rings it too."""
    command = [sys.executable, "-m", "reconciler.cmds.apply", *argv, "--format", "json"]
    if bell is not None:
        return bell.popen(command, log, cwd=ROOT, stdout=subprocess.PIPE)
    with log.open("w") as err:
        return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=err,
                                text=True)
