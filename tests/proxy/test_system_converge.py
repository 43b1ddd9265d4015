"""The example site planned and applied through two proxies, on real PostgreSQL (issue 24).

One story, judged by four checks (an apply of the example takes seconds): two
``xce-proxy`` processes serve the five proxied providers, each with a canary API token in
its own environment; ``xce-apply`` (CI's environment: no secret) records the config and
applies the controller's part (the bootstrap); once proxy-a has published, the plan made
through the proxies is compared with the plan made in-process; then that plan is applied
while the active proxy is SIGKILLed at random points, again and again (each killed proxy
is started again and stands by), and a last plan must find nothing to do.

The seed is printed; ``XCE_PROXY_KILL_SEED=<seed>`` repeats a run's kill points and
``XCE_PROXY_KILLS`` sets how many kills to try (default 3; 5 or more by hand).
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from reconciler.apply.ops import op_id, plan_digest
from reconciler.plan.file import load_plan
from reconciler.state import OpStatus
from tests.apply.crashing import example_ledger
from tests.proxy.conftest import PROXIES, SCHEMA, cluster_at
from tests.proxy.harness import SITE, Cluster, Run, store_rows
from tests.state.targets import pg_schema

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

SEED = int(os.environ.get("XCE_PROXY_KILL_SEED") or random.randrange(1 << 32))
KILLS = int(os.environ.get("XCE_PROXY_KILLS") or 3)


@dataclass
class Story:
    """What happened, for the tests to judge."""

    cluster: Cluster
    proxied_plan: dict[str, Any]  # xce-plan --format json through the proxies
    in_process_plan: dict[str, Any]  # the same, with every provider in-process
    plan_file: Path
    ledger_before: list[str]  # every op_id the providers had applied before the apply
    apply: Run
    kills: list[str] = field(default_factory=list)  # the proxies killed, in order
    final_plan: Run | None = None


def published_by(cluster: Cluster, proxy: str, since: float = 0.0) -> bool:
    """Whether ``proxy`` has published every proxied provider (after store time ``since``)."""
    with cluster.store() as store:
        headers = store.published_headers(SITE)
        return len(headers) == 5 and all(h.proxy == proxy and h.error is None
                                          and h.published > since for h in headers.values())


def holder(cluster: Cluster) -> str:
    """The proxy that holds the most leases now."""
    with cluster.store() as store:
        now = store.store_now()
        held = Counter(lease.holder for lease in store.provider_leases(SITE).values()
                       if lease.held(now))
    return held.most_common(1)[0][0]


def in_process_plan(cluster: Cluster) -> dict[str, Any]:
    """The plan of the same site with every provider in-process, on the same data and store."""
    site = cluster.root / "in-process"
    shutil.copytree(cluster.site, site)
    yaml = site / "site.yaml"
    yaml.write_text(yaml.read_text().replace("    serve: all\n", "    serve: none\n"))
    run = cluster.run("xce-plan", str(site), "--format", "json")
    assert run.code == 2, str(run)
    loaded: dict[str, Any] = json.loads(run.out)
    return loaded


def kill_rounds(cluster: Cluster, rng: random.Random, ops: dict[str, set[str]],
                story: Story, apply: Any) -> None:
    """SIGKILL the active proxy once a random number more of the plan's proxied calls are
    done, start it again (it stands by), and again, while the apply runs."""
    total = sum(len(v) for v in ops.values())

    def done() -> int:
        with cluster.store() as store:
            return sum(len(store.call_replies(SITE, p, ids)) for p, ids in ops.items())

    for _ in range(KILLS):
        before = done()
        if before >= total or apply.poll() is not None:
            return
        point = before + rng.randrange(total - before)
        reached = cluster.wait(lambda at=point: done() >= at, f"{point} calls done", apply)
        if not reached:
            return
        victim = holder(cluster)
        other = next(p for p in PROXIES if p != victim)
        taken = len(cluster.proxy(other).events("lease-taken"))
        cluster.proxy(victim).kill()
        story.kills.append(victim)
        cluster.wait_event(other, "lease-taken", taken + 5)  # the standby took every provider
        cluster.proxy(victim).start()  # back, it stands by: a held lease does not move


def run_story(cluster: Cluster) -> Story:
    rng = random.Random(f"{SEED}")
    cluster.start(*PROXIES)
    boot = cluster.run("xce-apply", str(cluster.site), "--auto-approve")
    # the bootstrap: its plan was made before any proxy served, so the proxied providers
    # were unknown in it and the apply is incomplete (exit 1); it recorded the config
    assert boot.code in (0, 1) and "Traceback" not in boot.err, str(boot)
    with cluster.store() as store:
        assert store.applied_config(SITE) is not None, str(boot)
    cluster.wait(lambda: published_by(cluster, "proxy-a"), "proxy-a published all five")
    reference = in_process_plan(cluster)
    plan_file = cluster.root / "plan.json"
    proxied = cluster.run("xce-plan", str(cluster.site), "--format", "json", "--out",
                          str(plan_file))
    assert proxied.code == 2, str(proxied)
    plan = load_plan(plan_file).plan
    digest = plan_digest(plan)
    ops: dict[str, set[str]] = {}
    for action in plan.actions:
        if action.provider != "controller":
            ops.setdefault(action.provider, set()).add(op_id(digest, action))
    before = example_ledger(cluster.workdir)
    log = cluster.root / "apply.log"
    apply = cluster.spawn("xce-apply", str(plan_file), "--format", "json", log=log)
    story = Story(cluster, json.loads(proxied.out), reference, plan_file, before,
                  Run([], 0, "", ""))
    kill_rounds(cluster, rng, ops, story, apply)
    out, _ = apply.communicate(timeout=300)
    story.apply = Run(apply.args, apply.returncode, out, log.read_text())
    cluster.cli_runs.append(story.apply)
    cluster.wait_settled()
    story.final_plan = cluster.run("xce-plan", str(cluster.site))
    return story


def test_the_example_site_through_two_proxies_killed_at_random(tmp_path: Path) -> None:
    """One test, not one per check: the story takes half a minute, and a module fixture
    would be made once per xdist worker that runs one of its tests."""
    print(f"XCE_PROXY_KILL_SEED={SEED}")
    with pg_schema(SCHEMA) as url, cluster_at(tmp_path, url) as cluster:
        story = run_story(cluster)
        check_same_plan(story)
        check_converged(story)
        check_each_op_once(story)
        check_no_canary_leaves(story)


def check_same_plan(story: Story) -> None:
    """The plan made through the proxies is the plan made with the providers in-process."""
    proxied, reference = story.proxied_plan, story.in_process_plan
    assert proxied["actions"], "the plan through the proxies plans nothing"
    assert {a["provider"] for a in proxied["actions"]} >= {
        "shared-fs", "gpu-cache", "cpu-cache", "cloud-burst"}
    assert proxied["actions"] == reference["actions"]
    assert proxied["summary"] == reference["summary"]
    assert proxied["unknown"] == reference["unknown"] == []


def check_converged(story: Story) -> None:
    """The apply finished although its active proxy was killed; a last plan is empty."""
    seed = f"seed {SEED}, kills {story.kills}"
    assert story.apply.code == 0, f"{seed}: {story.apply}"
    report = json.loads(story.apply.out)
    assert report["result"] == "applied", seed
    assert story.kills, f"{seed}: no proxy was killed while the apply ran"
    assert story.final_plan is not None
    assert story.final_plan.code == 0, f"{seed}: {story.final_plan}"


def check_each_op_once(story: Story) -> None:
    """0 lost, 0 done twice: every op of the plan is in the providers' ledgers once, and
    nothing else was applied (a call redone under a new op_id would be counted twice)."""
    plan = load_plan(story.plan_file).plan
    digest = plan_digest(plan)
    ops = Counter(op_id(digest, a) for a in plan.actions)
    applied = Counter(example_ledger(story.cluster.workdir)) - Counter(story.ledger_before)
    assert applied == ops, f"seed {SEED}, kills {story.kills}"
    with story.cluster.store() as store:
        journal = store.journal(plan_digest=digest)
        assert Counter(e.status for e in journal) == {OpStatus.DONE: len(ops)}
        assert store.in_doubt("apply/") == []
        assert sum(store.queue_depth(SITE).values()) == 0


def check_no_canary_leaves(story: Story) -> None:
    """Each proxy's environment held a canary token, and the license file another; the
    simulators echo them in every reply. None is in any row of the store, any log of a
    proxy or provider, or any output of xce-plan and xce-apply."""
    cluster = story.cluster
    assert cluster.canaries
    rows = store_rows(cluster.state_url)
    assert rows.get("published_inventories") and rows.get("proxy_calls"), sorted(rows)
    texts = {f"store table {t}": "\n".join(r) for t, r in rows.items()}
    for name, proxy in cluster.proxies.items():
        texts[f"log of {name}"] = proxy.all_text()
    for path in cluster.workdir.rglob("*.log"):
        texts[str(path)] = path.read_text(errors="replace")
    for i, run in enumerate(cluster.cli_runs):
        texts[f"output {i} of {' '.join(run.argv[:2])}"] = run.out + run.err
    texts["the saved plan"] = story.plan_file.read_text()
    leaked = [(c, where) for c in cluster.canaries for where, text in texts.items()
              if c in text]
    assert leaked == []
    # the simulators did see them, and echoed them: the proxies redacted what they passed on
    echoed = "\n".join(texts[k] for k in texts if k.endswith("stderr.log"))
    assert "(sensitive)" in echoed or "(sensitive)" in texts["store table proxy_calls"]
