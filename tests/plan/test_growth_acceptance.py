"""Issue 21: a deliberate expansion is not "an inventory that shrank".

The small site (controller map, directory provider) in a real git repository, applied for
real; then a pull request triples its hosts, so the plan creates more than
``max_create_fraction`` of the controller's entries. With ``--base`` the planner knows the
config added them: it says so (XCE758) instead of blaming the provider, and
``--accept-growth controller`` accepts it for that one plan, which records it and whose apply
checks it again; the site's settings are never changed. Without growth in the config (a
real loss), the XCE754 guard stays and no acceptance of growth covers it (XCE759).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

import reconciler.cmds.apply as apply_cli
import reconciler.cmds.plan as plan_cli
from reconciler.pipeline import gather, load_desired
from tests.apply.small_site import write_site

GROWN = "the config adds 24 entries there against HEAD~1"
ACCEPTED = "accepted for this plan only (--accept-growth controller)"


@dataclass
class Run:
    code: int
    out: str
    err: str


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@example.org", "-c", "user.name=t", *args],
                   cwd=root, check=True, capture_output=True)


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Path:
    """The small site applied (4 hosts), then a commit that makes them 12: 24 entries more
    at the controller, 24 of its 38 desired entries to create (63% > 50%)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("XCE_STATE_URL", raising=False)
    site = write_site(tmp_path / "site")
    (site / "site.yaml").write_text((site / "site.yaml").read_text()
                                    + "  safety: {min_entries: 5}\n")
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "the small site")
    assert apply_cli.main(["site", "--auto-approve"]) == 0
    hosts = site / "hosts.yaml"
    hosts.write_text(hosts.read_text().replace("cn[01-04]", "cn[01-12]"))
    _git(tmp_path, "commit", "-qam", "eight more hosts")
    capsys.readouterr()
    return tmp_path


def _plan(capsys: pytest.CaptureFixture[str], *args: str) -> Run:
    capsys.readouterr()
    code = plan_cli.main(["site", *args])
    out, err = capsys.readouterr()
    return Run(code, out, err)


def _problems(run: Run) -> list[tuple[str, str, str]]:
    return [(p["code"], p["severity"], p["message"]) for p in orjson.loads(run.out)["problems"]]


def test_growth_the_config_intends_is_said_so(here: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    run = _plan(capsys, "--base", "HEAD~1", "--format", "json")
    assert run.code == 1
    [(code, severity, message)] = _problems(run)
    assert (code, severity) == ("XCE758", "error")
    assert message.startswith("the plan would create 24 of the 38 entries desired at provider "
                              "controller (63%), more than max_create_fraction 50%")
    assert GROWN in message and "growth the config intends" in message
    assert "shrank" not in message.replace("not an inventory that shrank", "")
    assert "xce-plan --accept-growth controller" in run.err  # the hint offers the override
    # without a config diff the planner cannot tell growth from loss: the guard as it was
    plain = _plan(capsys, "--format", "json")
    assert plain.code == 1
    assert [(c, s) for c, s, _ in _problems(plain)] == [("XCE754", "error")]
    assert "plan with --base REV" in plain.err


def _world(here: Path) -> dict[str, object]:
    live = gather(load_desired(here / "site", None), here / "site" / ".xce").supply
    return {i: e.to_json() for i, e in live.entries.items()}


def test_accepted_once_recorded_in_the_plan_and_applied(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = (here / "site" / "site.yaml").read_text()
    run = _plan(capsys, "--base", "HEAD~1", "--accept-growth", "controller", "--out",
                "plan.json")
    assert run.code == 2, run.err
    assert "warning[XCE758]" in run.out and ACCEPTED in run.out  # text: in the plan
    assert "site.safety.max_create_fraction stays 50%" in run.out
    body = json.loads((here / "plan.json").read_bytes())["body"]["plan"]
    assert body["accepted_growth"] == ["controller"]
    assert [p["code"] for p in body["problems"]] == ["XCE758"]  # the plan's own note
    # a one-off: nothing persisted; the next plan without it is refused again
    assert (here / "site" / "site.yaml").read_text() == settings
    assert _plan(capsys, "--base", "HEAD~1").code == 1
    md = _plan(capsys, "--base", "HEAD~1", "--accept-growth", "controller", "--format",
               "markdown")
    assert md.code == 2 and "XCE758" in md.out and "--accept-growth controller" in md.out
    capsys.readouterr()
    assert apply_cli.main(["plan.json"]) == 0, capsys.readouterr().err
    assert "host/cn12" in _world(here)


def test_the_apply_checks_the_acceptance_again(here: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Between plan and apply the controller lost an entry the plan does not create: its
    acceptance covered the config's growth, not that loss, so nothing is applied."""
    assert _plan(capsys, "--base", "HEAD~1", "--accept-growth", "controller", "--out",
                 "plan.json").code == 2
    with sqlite3.connect(here / "site" / ".xce" / "providers" / "controller" / "map.sqlite") as db:
        db.execute("DELETE FROM entries WHERE id = 'counter/mem@host/cn01'")
    before = _world(here)
    capsys.readouterr()
    assert apply_cli.main(["plan.json"]) == 1
    err = capsys.readouterr().err
    assert "error[XCE759]: the plan accepted the config's growth at provider controller for " \
           "the 24 entries it creates there, but planned again now 1 more are missing there " \
           "(counter/mem@host/cn01" in err
    assert "Traceback" not in err
    assert _world(here) == before


def test_a_real_loss_keeps_the_guard(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The config did not grow (``--base HEAD``), but the controller's snapshot lost its
    hosts: XCE754 as before, and --accept-growth cannot cover it (XCE759)."""
    live = gather(load_desired(here / "site", None), here / "site" / ".xce").supply
    doc = {"entries": [e.to_json() for i, e in sorted(live.entries.items())
                       if not i.startswith(("counter/", "host/cn0"))]}
    (here / "lost.json").write_bytes(orjson.dumps(doc))
    _git(here, "commit", "-qm", "empty", "--allow-empty")
    args = ("--base", "HEAD", "--live", "lost.json", "--workdir", "elsewhere", "--format",
            "json")
    run = _plan(capsys, *args)
    assert run.code == 1
    [(code, _, message)] = _problems(run)
    assert code == "XCE754" and message.endswith("its inventory shrank sharply")
    assert "(the config adds 0 of them against HEAD" in message
    accepted = _plan(capsys, *args, "--accept-growth", "controller")
    assert accepted.code == 1
    assert [c for c, _, _ in _problems(accepted)] == ["XCE754", "XCE759"]
    assert "--accept-growth controller cannot accept: it creates more there than the " \
           "entries the config adds" in accepted.out


def test_an_acceptance_without_a_config_diff_or_growth(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _plan(capsys, "--accept-growth", "controller", "--format", "json")
    assert run.code == 1
    assert ("XCE759", "error") in [(c, s) for c, s, _ in _problems(run)]
    assert "plan with --base REV" in run.out
    other = _plan(capsys, "--base", "HEAD~1", "--accept-growth", "controller",
                  "--accept-growth", "shared-fs", "--format", "json")
    assert other.code == 1
    assert [(c, s) for c, s, _ in _problems(other)] == [("XCE758", "warning"),
                                                         ("XCE759", "error")]
    assert "--accept-growth shared-fs cannot accept: the plan is not refused for growth " \
           "there" in other.out
