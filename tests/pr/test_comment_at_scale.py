"""Issue 21: the pull-request comment at scale (``xce-plan --base REV --format markdown``,
the body ``xce-pr comment`` posts).

The example site in a real git repository, planned against a live map that holds its last
applied config (the base compiled), for a pull request that adds 500 hosts, one that adds
3,000, and one that changes safety values. The budget is shared over the groups: every
group shows a few lines and says how many more it has and which; counters are folded into
their hosts' hostlists with their amounts; changed settings are always shown, old → new.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from compiler.cmds import compile as compile_cli
from reconciler.render.markdown import LIMIT
from tests.conftest import EXAMPLE_SITE
from tests.e2e.workspace import CliRun, Workspace, run_plan
from tests.policy.gitrepo import PolicyRepo

CLUSTER = "\n## What the cluster will get\n\n"
NEW_HOSTS = "version: 1\nhost_groups:\n  - name: newcpu\n    hosts: nx[0001-0500]\n"
EMPTY_BLOCK = re.compile(r"```diff\n```")
ONE_HOST = re.compile(r"^[+!-] (?:\w+ +)?host/[a-z]+\d+(?: |$)")


@pytest.fixture
def repo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> PolicyRepo:
    """The example site committed, and compiled into ``applied.json``: the live map of a
    site whose last apply was that commit."""
    handle = PolicyRepo(tmp_path / "repo", with_policies=False)
    shutil.copytree(EXAMPLE_SITE, handle.path / "site-config")
    handle.base = handle.commit("the example site")
    assert compile_cli.main([str(handle.path / "site-config"), "--out",
                             str(tmp_path / "build")]) == 0
    (tmp_path / "build" / "supply-map.json").rename(tmp_path / "applied.json")
    capsys.readouterr()
    return handle


def _comment(repo: PolicyRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str],
             monkeypatch: pytest.MonkeyPatch, *extra: str) -> CliRun:
    ws = Workspace(site=repo.path / "site-config", workdir=tmp_path / "work")
    run = run_plan(ws, capsys, monkeypatch, "--live", str(tmp_path / "applied.json"),
                   "--base", repo.base, "--format", "markdown", *extra)
    assert run.code == 2, run.err
    assert len(run.out) <= LIMIT
    return run


def _condensed(text: str, base: str, head: str) -> str:
    """The comment for its snapshot: runs of one-host lines (``+ host/nx0007``) shortened to
    their first and last line, the commits named by placeholders."""
    out: list[str] = []
    run: list[str] = []
    for line in [*text.split("\n"), ""]:
        if ONE_HOST.match(line):
            run.append(line)
            continue
        if len(run) > 3:
            run[1:-1] = [f"⋮ ({len(run) - 2} more lines like these)"]
        out += [*run, line]
        run = []
    return "\n".join(out[:-1]).replace(base[:12], "<base>").replace(head[:12], "<head>")


def _blocks(text: str) -> list[tuple[str, list[str]]]:
    """Each <details>: its summary and the lines of its block."""
    return [(summary, body.strip("\n").splitlines())
            for summary, body in re.findall(r"<summary>(.*?)</summary>\n\n(?:```diff\n)?(.*?)"
                                            r"(?:```\n)?</details>", text, re.S)]


def test_500_hosts_added(repo: PolicyRepo, tmp_path: Path,
                         capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                         snapshot: SnapshotAssertion) -> None:
    repo.write("site-config/hosts/new.yaml", NEW_HOSTS)
    head = repo.commit("500 new CPU nodes")
    run = _comment(repo, tmp_path, capsys, monkeypatch)
    config, cluster = run.out.split(CLUSTER)
    assert not EMPTY_BLOCK.search(run.out)
    assert all(lines for _, lines in _blocks(run.out)), "a group with nothing in it"
    # counters folded into their hosts' hostlist, with their amounts
    assert "\n+ counters of host/nx[0001-0500]: slots 64, mem 256GiB\n" in config
    assert ("\n+ create   counters of host/nx[0001-0500]: slots 64, mem 256GiB  [controller]  "
            "not in the live map\n") in cluster
    assert _condensed(run.out, repo.base, head) == snapshot


def test_3000_hosts_share_the_budget(repo: PolicyRepo, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """More than fits: every group still shows a few of its entries and says how many more
    there are, and which; the settings changed beside them are shown whatever the budget."""
    repo.write("site-config/hosts/many.yaml",
               "version: 1\nhost_groups:\n  - name: many\n    hosts: mx[0001-3000]\n"
               "  - name: few\n    hosts: fw[01-40]\n")
    repo.edit("site-config/site.yaml", "max_changes: 5000", "max_changes: 12000")
    repo.commit("many hosts")
    # 9,122 of the controller's 12,360 entries to create: growth the config intends (XCE758)
    run = _comment(repo, tmp_path, capsys, monkeypatch, "--accept-growth", "controller")
    assert "accepted for this plan only (--accept-growth controller)" in run.out
    config, cluster = run.out.split(CLUSTER)
    assert "\n! safety.max_changes: 5000 → 12000\n" in config
    assert not EMPTY_BLOCK.search(run.out)
    blocks = dict(_blocks(config))
    many = blocks["+ 3000 host: host/mx[0001-3000] (group many)"]
    assert len(many) > 3 and many[0] == "+ host/mx0001"
    assert re.fullmatch(r"… and \d+ more hosts: mx\[\d{4}-3000\]", many[-1]), many[-1]
    assert blocks["+ 40 host: host/fw[01-40] (group few)"][0] == "+ host/fw01"
    for summary, lines in _blocks(cluster):
        assert lines, summary
    assert re.search(r"\n… and \d+ more hosts: mx\[\d{4}-3000\]\n", cluster)


def test_a_settings_change(repo: PolicyRepo, tmp_path: Path,
                          capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                          snapshot: SnapshotAssertion) -> None:
    repo.edit("site-config/site.yaml", "max_changes: 5000", "max_changes: 6000")
    repo.edit("site-config/site.yaml", "host: 0.10", "host: 0.05")
    repo.write("site-config/hosts/new.yaml", NEW_HOSTS)
    head = repo.commit("stricter safety, 500 new hosts")
    run = _comment(repo, tmp_path, capsys, monkeypatch)
    config = run.out.split(CLUSTER)[0]
    assert "\n! safety.max_changes: 5000 → 6000\n" in config
    assert "\n! safety.max_delete_fraction.host: 0.1 → 0.05\n" in config
    assert config.index("safety.max_changes: 5000") < config.index("<details>")
    assert _condensed(config, repo.base, head) == snapshot
