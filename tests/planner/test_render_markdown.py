"""The markdown plan as a pull-request comment (issue 11 §3): actions grouped by verb and
kind with ids folded as hostlists, each entry inside ``<details>``, destroys and guard
breaches first, within GitHub's 65,536 characters, and a truncation note that names only
places that hold the full plan. Planned through ``xce-plan`` from real map files."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest

import reconciler.cmds.plan as plan_cli
from reconciler.pr.github import BODY_LIMIT as GITHUB_LIMIT
from reconciler.render.markdown import LIMIT

SITE = {"owner": "site/t", "schema": 1, "site": "t"}


def _host(name: str, group: str) -> dict[str, Any]:
    return {"id": f"host/{name}", "kind": "host", "owner": "site/t", "provider": "ctl",
            "source": "config", "state": "available",
            "attributes": {"group": group, "features": ["avx2"], "rack": "r1"}}


def _counter(name: str, amount: int) -> dict[str, Any]:
    return {"id": f"counter/{name}@site", "kind": "counter", "owner": "site/t",
            "provider": "ctl", "source": "config", "state": "available", "amount": amount}


def _maps(tmp_path: Path, desired: list[dict[str, Any]], live: list[dict[str, Any]]) -> None:
    """Both maps hold counter/keep@site: a provider that reports nothing is refused (XCE753)."""
    desired, live = [*desired, _counter("keep", 1)], [*live, _counter("keep", 1)]
    doc = {**SITE, "digest": "sha256:" + "0" * 64, "dirty": False, "revision": "abc123",
           "settings": {"owner": "site/t", "site": "t",
                        "management": {"counter": "correct-destructive"}},
           "entries": desired}
    (tmp_path / "supply-map.json").write_bytes(orjson.dumps(doc))
    (tmp_path / "live.json").write_bytes(orjson.dumps({**SITE, "entries": live}))
    (tmp_path / "bindings.json").write_text('{"providers": {}}')


def _xce_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    capsys.readouterr()
    code = plan_cli.main(["--desired", str(tmp_path / "supply-map.json"), "--live",
                          str(tmp_path / "live.json"), "--workdir", str(tmp_path / "work"),
                          "--format", "markdown", "--destroy", *extra])
    assert code == 2, capsys.readouterr().err
    return capsys.readouterr().out


def _thousand_hosts() -> list[dict[str, Any]]:
    return ([_host(f"cn{i:04d}", "cpu-a") for i in range(1, 961)]
            + [_host(f"gpu{i:02d}", "gpu") for i in range(1, 41)])


def test_a_1000_host_site_is_folded_by_kind_and_verb_with_entries_in_details(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _maps(tmp_path, _thousand_hosts(), [])
    out = _xce_plan(tmp_path, capsys, "--force")  # a first plan creates more than half
    summaries = re.findall(r"<summary>(.*)</summary>", out)
    assert summaries == ["+ create 960 host [ctl]: host/cn[0001-0960] (group cpu-a)",
                         "+ create 40 host [ctl]: host/gpu[01-40] (group gpu)"]
    # each group's <details> holds one line per entry, in apply order
    blocks = re.findall(r"<details>\n<summary>[^\n]*</summary>\n\n```diff\n(.*?)```\n</details>",
                        out, re.S)
    cpu = blocks[0].splitlines()
    assert len(cpu) == 960 and cpu[0].startswith("+ create   host/cn0001  [ctl]")
    assert cpu[-1].startswith("+ create   host/cn0960  [ctl]")
    assert len(blocks[1].splitlines()) == 40
    assert "Truncated" not in out


def test_destroys_and_guard_breaches_come_first(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The apply order puts the creates first here; the comment shows the destroys first,
    after the guard's problems (XCE751: 9 of 11 live counters removed)."""
    live = [_counter(f"c{i}", 1) for i in range(10)]
    _maps(tmp_path, [*_thousand_hosts()[:3], _counter("c0", 2)], live)
    out = _xce_plan(tmp_path, capsys, "--force")
    summaries = re.findall(r"<summary>(.*)</summary>", out)
    removed = ",".join(f"c{i}@site" for i in range(1, 10))
    assert summaries == [f"- delete 9 counter [ctl]: counter/{{{removed}}}",
                         "~ update 1 counter [ctl]: counter/c0@site",
                         "+ create 3 host [ctl]: host/cn[0001-0003] (group cpu-a)"]
    assert "XCE751" in out
    assert out.index("XCE751") < out.index("<details>")


def _huge(tmp_path: Path) -> None:
    """4,200 hosts in 7 groups to create, 4,000 counters to delete: ~500,000 characters."""
    _maps(tmp_path, [_host(f"cn{i:05d}", f"g{i // 600}") for i in range(4200)],
          [_counter(f"c{i:05d}", 1) for i in range(4000)])


def test_a_huge_plan_fits_a_github_comment_and_points_to_json_without_an_artifact(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _huge(tmp_path)
    out = _xce_plan(tmp_path, capsys, "--force")
    assert len(out) < LIMIT < GITHUB_LIMIT
    summaries = re.findall(r"<summary>(.*)</summary>", out)
    assert summaries[0].startswith("- delete 4000 counter [ctl]: counter/{c00000@site,")
    assert summaries[1:] == [
        f"+ create 600 host [ctl]: host/cn[{g * 600:05d}-{g * 600 + 599:05d}] (group g{g})"
        for g in range(7)]
    assert out.count("<details>") == out.count("</details>") and out.count("```") % 2 == 0
    [note] = [line for line in out.splitlines() if "**Truncated:**" in line]
    assert note.endswith("`xce-plan --format json` shows all of it.")
    assert "artifact" not in note and "plan file" not in note
    out = _xce_plan(tmp_path, capsys, "--force", "--out", str(tmp_path / "plan.json"))
    [note] = [line for line in out.splitlines() if "**Truncated:**" in line]
    assert f"the saved plan file `{tmp_path / 'plan.json'}`" in note and "artifact" not in note


def test_the_note_names_the_artifact_only_when_the_plan_was_saved(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _huge(tmp_path)
    monkeypatch.chdir(tmp_path)
    out = _xce_plan(tmp_path, capsys, "--force", "--out", "plan.json",
                    "--full-plan-artifact", "xce-plan")
    assert len(out) < LIMIT
    [note] = [line for line in out.splitlines() if "**Truncated:**" in line]
    assert ("The full plan is in the CI artifact `xce-plan` (the saved plan file "
            "`plan.json`)") in note
    # without --force the guard blocks the plan: it is not saved, so no artifact holds it
    capsys.readouterr()
    code = plan_cli.main(["--desired", str(tmp_path / "supply-map.json"), "--live",
                          str(tmp_path / "live.json"), "--workdir", str(tmp_path / "work"),
                          "--format", "markdown", "--destroy", "--out", "blocked.json",
                          "--full-plan-artifact", "xce-plan"])
    out = capsys.readouterr().out
    assert code == 1 and "refused by a guard" in out and not Path("blocked.json").exists()
    [note] = [line for line in out.splitlines() if "**Truncated:**" in line]
    assert "artifact" not in note and note.endswith("`xce-plan --format json` shows all of it.")


def test_the_artifact_option_needs_a_saved_plan(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    _maps(tmp_path, _thousand_hosts()[:1], [])
    code = plan_cli.main(["--desired", str(tmp_path / "supply-map.json"),
                          "--full-plan-artifact", "xce-plan"])
    err = capsys.readouterr().err
    assert code == 1
    assert "--full-plan-artifact" in err and "give --out FILE too" in err
