"""One failure, and what waited on it (issue 21): the report says the failure once and what
did not run because of it in one line per cause, and a dataset copy that fails to stage
holds back no host or counter, since jobs need the copy and creating a host does not."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

import reconciler.cmds.apply as apply_cli
from reconciler.apply import ApplyReport, Outcome, Status, codes
from reconciler.apply.progress import PlainLines
from reconciler.plan.model import Action, Verb
from reconciler.render.apply import render
from tests.e2e.workspace import SITES, materialize

HERE = Path(__file__).resolve().parent
TINY = "sha256:47f2efc88d22e937d32e92fdfe8b93a59403fab9310b1380fd2013fffb26dda5"
WRONG = "sha256:" + "0" * 64
STAGE = "stage:dataset-copy/tiny@1@group/gpu"


def _action(verb: str, entry: str, provider: str = "controller") -> Action:
    return Action(f"{verb}:{entry}", Verb(verb), entry, entry.split("/")[0], provider, "test")


def _waiting(cause: Action, entry: str) -> Outcome:
    return Outcome(_action("create", entry), entry, Status.SKIPPED, code=codes.SKIP_DEPENDENCY,
                   message=f"depends on {cause.id}, which failed",
                   hint=codes.HINTS[codes.SKIP_DEPENDENCY], cause=cause.id)


def _report() -> ApplyReport:
    """A copy that failed to stage, and the 321 actions of a GPU group that waited on it
    (as they did before hosts stopped waiting on copies): group, 64 hosts, 4 counters each;
    and 3 more that waited on a second failure."""
    stage = _action("stage", "dataset-copy/imagenet@3@group/gpu", "gpu-cache")
    quota = _action("create", "volume/scratch", "shared-fs")
    hosts = [f"host/gn{i:03d}" for i in range(1, 65)]
    waiting = [_waiting(stage, "host-group/gpu"), *(_waiting(stage, h) for h in hosts),
               *(_waiting(stage, f"counter/{c}@{h}") for c in ("gpu", "mem", "slots", "ib")
                 for h in hosts),
               *(_waiting(quota, f"volume-dir/scratch/u{i}") for i in range(3))]
    outcomes = (
        Outcome(stage, "s", Status.FAILED, 1, codes.ACTION_FAILED, "FAILED_PRECONDITION: "
                "digest mismatch for imagenet@3", codes.HINTS[codes.ACTION_FAILED]),
        Outcome(quota, "q", Status.FAILED, 4, codes.ACTION_FAILED, "UNAVAILABLE: proxy down",
                codes.HINTS[codes.ACTION_FAILED]),
        Outcome(_action("create", "host/cn01"), "c", Status.DONE, 1),
        Outcome(_action("release", "host/cn99"), "r", Status.SKIPPED, code=codes.SKIP_DESTROY,
                message="'release' is destructive and this apply has no destroy permission",
                hint=codes.HINTS[codes.SKIP_DESTROY]),
        *waiting,
    )
    return ApplyReport("sha256:" + "1" * 64, "sha256:" + "2" * 64, None, "apply/x", 1,
                       outcomes)


def test_what_waited_on_a_failure_is_one_line_per_cause() -> None:
    text = render(_report(), "text")
    assert "which failed" not in text  # before: 324 lines of "depends on …, which failed"
    lines = text.splitlines()
    assert len(lines) < 20, text
    follow = [line for line in lines if "not run because" in line]
    assert follow == [
        "  321 actions not run because stage dataset-copy/imagenet@3@group/gpu failed "
        "(XCE835): create host-group/gpu, host/gn[001-064], counter/gpu@host/gn[001-064], "
        "counter/mem@host/gn[001-064], counter/slots@host/gn[001-064], "
        "counter/ib@host/gn[001-064]",
        "  3 actions not run because create volume/scratch failed (XCE835): create "
        "volume-dir/scratch/u[0-2]",
    ]
    assert "Not run (324), waiting on an action that failed or was skipped:" in lines
    assert "Skipped (1):" in lines  # the gated release stands alone, with its own hint
    assert lines[-1] == "1 done, 0 already done, 2 failed, 325 skipped in 0.0s"


def test_json_keeps_every_action_with_its_cause() -> None:
    doc = json.loads(render(_report(), "json"))
    skipped = [a for a in doc["actions"] if a["status"] == "skipped"]
    assert len(skipped) == 325
    assert {a["cause"] for a in skipped} == {
        "stage:dataset-copy/imagenet@3@group/gpu", "create:volume/scratch", None}
    assert [(f["cause"], f["code"], f["status"], f["count"]) for f in doc["follow_on"]] == [
        ("stage:dataset-copy/imagenet@3@group/gpu", "XCE835", "failed", 321),
        ("create:volume/scratch", "XCE835", "failed", 3)]
    assert doc["follow_on"][1]["waited"] == [f"create:volume-dir/scratch/u{i}" for i in range(3)]


def _site(tmp_path: Path, *edits: tuple[str, str, str]) -> Path:
    """The e2e base site (a GPU group gn[01-02] with two dataset copies), edited."""
    site = materialize(tmp_path / "site", SITES / "base", HERE.parent / "drift" / "site")
    for name, old, new in edits:
        path = site / name
        assert path.read_text().count(old) == 1, old
        path.write_text(path.read_text().replace(old, new))
    return site


def _apply(site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    apply_cli.main([str(site), "--workdir", str(tmp_path / "work"), "--auto-approve",
                    "--format", "json"])
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def _status(doc: dict[str, Any]) -> dict[str, str]:
    return {a["id"]: a["status"] for a in doc["actions"]}


def test_a_wrong_digest_fails_its_copy_and_the_gpu_hosts_are_created(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A new GPU group whose dataset copy has a wrong digest: the copy fails (XCE835), the
    group's entry that would list it is the one action not run (said once, with its
    cause), and the group's hosts and their counters are created; before, they all
    waited on the copy."""
    doc = _apply(_site(tmp_path, ("datasets.yaml", TINY, WRONG)), tmp_path, capsys)
    status = _status(doc)
    assert status[STAGE] == "failed" and doc["result"] == "failed"
    for entry in ("host/gn01", "host/gn02", "counter/gpu@host/gn01", "counter/gpu@host/gn02",
                  "counter/slots@host/gn01", "counter/cache@group/gpu"):
        assert status[f"create:{entry}"] == "done", entry
    assert status["stage:dataset-copy/notes@2@group/gpu"] == "done"
    (follow,) = doc["follow_on"]
    assert (follow["cause"], follow["code"], follow["status"]) == (STAGE, "XCE835", "failed")
    assert follow["waited"] == ["create:host-group/gpu"] and doc["counts"]["skipped"] == 1


def test_an_existing_group_waits_for_its_copy_and_its_new_hosts_do_not(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An applied GPU group gets a new dataset version of a wrong digest and two more hosts:
    the group's write that would list the copy waits on the stage and is the one action
    not run, said once with its cause; the new hosts and their counters are created."""
    site = _site(tmp_path)
    assert _apply(site, tmp_path, capsys)["result"] == "applied"
    grown = (site / "hosts.yaml").read_text().replace("hosts: gn[01-02]", "hosts: gn[01-04]")
    (site / "hosts.yaml").write_text(grown)
    with (site / "datasets.yaml").open("a") as fh:
        fh.write(f"  - name: tiny\n    version: 2\n    size: 2KiB\n    digest: {WRONG}\n"
                 "    source: tiny@1\n    copies:\n      - location: group/gpu\n"
                 "        provider: gpu-cache\n")
    doc = _apply(site, tmp_path, capsys)
    status = _status(doc)
    assert status["stage:dataset-copy/tiny@2@group/gpu"] == "failed"
    for entry in ("host/gn03", "host/gn04", "counter/gpu@host/gn03", "counter/slots@host/gn04"):
        assert status[f"create:{entry}"] == "done", entry
    (follow,) = doc["follow_on"]
    assert (follow["cause"], follow["code"], follow["waited"]) == (
        "stage:dataset-copy/tiny@2@group/gpu", "XCE835", ["update:host-group/gpu"])


def test_the_progress_log_says_what_waited_once() -> None:
    """CI's plain progress lines: one line for the 321 actions that waited on the copy."""
    out = io.StringIO()
    lines = PlainLines(out)
    report = _report()
    lines.start(len(report.outcomes))
    for outcome in report.outcomes:
        lines.update(outcome)
    lines.close()
    shown = out.getvalue().splitlines()
    assert len(shown) == 6, shown
    assert shown[4] == (
        "[325/328] skipped      321 actions: XCE832 depends on "
        "stage:dataset-copy/imagenet@3@group/gpu, which failed: create host-group/gpu, "
        "host/gn[001-064], counter/gpu@host/gn[001-064], counter/mem@host/gn[001-064], "
        "counter/slots@host/gn[001-064], counter/ib@host/gn[001-064]")
    assert shown[5].startswith("[328/328] skipped      3 actions: XCE832 depends on "
                               "create:volume/scratch, which failed")
