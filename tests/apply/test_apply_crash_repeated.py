"""A saved-plan apply killed again and again, at random points, still finishes (issue 8 §2).

The reproduction: killed once mid-run, then killed again early in the rerun, the apply was
refused as stale for ever (``XCE822 host/… changed since the plan was made``): the rerun
had reset the first kill's ops in doubt to ``pending``, so the run after it compared their
entries with the plan and found them changed — by those very ops.

Here a REAL ``xce-apply`` process is SIGKILLed several times in a row, each time once a
random number of journal rows are done (often none: just after the rerun journaled its
plan), on the example site (3,297 actions, built-in providers, whose calls die with the
runner) and on a site whose exec provider runs on after the kill (its call completes
while nobody listens). Then one more run must finish, ``xce-plan`` must show nothing to
do, and the providers' op ledgers must hold each op of the plan exactly once.
The seed is printed; ``XCE_CRASH_SEED=<seed>`` repeats a run's kill points.
"""

from __future__ import annotations

import json
import os
import random
import signal
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

import reconciler.cmds.plan as plan_cli
from reconciler.state import OpStatus, StateStore
from tests.apply.conftest import Site
from tests.apply.crashing import Crashing, example_site, exec_site, start_apply
from tests.apply.events import Doorbell, poll

pytestmark = pytest.mark.slow

KILLS = 4
SEED = int(os.environ.get("XCE_CRASH_SEED") or random.randrange(1 << 32))


def kill_at_random(rng: random.Random, store: StateStore, digest: str, argv: list[str],
                   total: int, log: Path, bell: Doorbell) -> bool:
    """Start an apply and SIGKILL it once its run has begun and a random number more ops
    are done (half the time few or none); False when it finished before that point.

    More ops done is checked at each progress line of the apply (``bell``); more than none
    means its run has begun. None more: the run's start is a row in the store that no
    event marks, so it is polled for (``poll``: every 5 ms, a bounded number of times)."""
    seen = {r.run_id for r in store.runs(limit=1000)}
    before = len(store.done_op_ids(digest))
    left = total - before
    if not left:  # the last one was killed after its last op: only the end is left to do
        return False
    more = rng.randrange(min(left, 20)) if rng.random() < 0.5 else rng.randrange(left)
    proc = start_apply(argv, log, bell)
    if more:
        reached = bell.wait(lambda: len(store.done_op_ids(digest)) >= before + more, proc,
                            f"{before + more} ops done")
    else:
        reached = poll(lambda: any(r.run_id not in seen for r in store.runs(limit=3)), proc)
    if reached and proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()  # reaped: its pid is gone, as after a CI runner's kill
        return True
    proc.communicate()
    assert proc.returncode == 0, f"seed {SEED}: {log.read_text()}"
    return False


def kill_series(rng: random.Random, site: Site, crashing: Crashing, kills: int,
                log: Path) -> tuple[int, int]:
    """Up to ``kills`` applies of ``crashing``'s plan, each SIGKILLed at random
    (``kill_at_random``); (the kills made, the ops done when the last one died)."""
    digest, ops = crashing.ops()
    made = 0
    with site.store() as store, Doorbell(log.with_name("events")) as bell:
        while made < kills and kill_at_random(rng, store, digest, crashing.argv, len(ops),
                                              log, bell):
            made += 1
        return made, len(store.done_op_ids(digest))


@pytest.mark.parametrize("make", [example_site, exec_site], ids=["example", "exec"])
def test_an_apply_killed_again_and_again_finishes_each_op_once(
        site: Site, make: Callable[[Site], Crashing], capsys: pytest.CaptureFixture[str]) -> None:
    print(f"XCE_CRASH_SEED={SEED}")
    rng = random.Random(f"{SEED}/{make.__name__}/{site.target.backend}")
    crashing = make(site)
    digest, ops = crashing.ops()
    log = site.root / "apply.log"
    _, killed_with = kill_series(rng, site, crashing, KILLS, log)

    last = start_apply(crashing.argv, log)
    out, _ = last.communicate(timeout=120)
    assert last.returncode == 0, f"seed {SEED}: {log.read_text()[-5000:]}"
    report = json.loads(out)
    assert report["result"] == "applied"
    assert report["counts"]["already-done"] >= killed_with
    assert report["counts"]["done"] + report["counts"]["already-done"] == len(ops)
    with site.store() as store:
        journal = store.journal(plan_digest=digest)
        assert Counter(e.status for e in journal) == {OpStatus.DONE: len(ops)}, f"seed {SEED}"
        assert store.in_doubt("apply/") == []
    applied = crashing.ledger()
    assert Counter(applied) == Counter(ops), f"seed {SEED}: each op applied exactly once"
    capsys.readouterr()
    assert plan_cli.main(crashing.plan_argv) == 0, f"seed {SEED}: " + capsys.readouterr().out
