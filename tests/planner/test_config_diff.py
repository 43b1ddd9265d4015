"""``xce-plan --base REV`` (issue 11 §2): the config diff against a git revision, beside the
live plan. Real git repositories (gitpython, and the git command for a shallow clone) hold
a copy of the example site; the base is read from the object store, never checked out."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest
from syrupy.assertion import SnapshotAssertion

import compiler.site_repo.site_at as site_at
import reconciler.cmds.plan as plan_cli
from compiler.contract.supply_map import Entry
from compiler.core.problems import UserError
from compiler.site_repo.config_diff import ConfigDiff, EntriesDiff, FieldChange, diff_entries
from compiler.source.git_tree import yaml_blobs
from compiler.source.yaml_source import SITE_POLICIES, find_yaml_files
from reconciler.pipeline import compile_desired
from reconciler.plan import codes
from reconciler.pr.github import BODY_LIMIT as GITHUB_LIMIT
from reconciler.render.markdown import LIMIT
from reconciler.review.config_base import against_base
from tests.conftest import EXAMPLE_SITE
from tests.e2e.workspace import E2E, CliRun, Workspace, run_plan
from tests.policy.gitrepo import PolicyRepo
from tests.policy.helpers import POLICIES

EMPTY_LIVE = E2E / "live_snapshots" / "valid" / "empty_new_providers.json"
TIB = 2**40
CPU_B = "    hosts: cn[0513-0960]"


@pytest.fixture
def repo(tmp_path: Path) -> PolicyRepo:
    """A site repository whose last commit holds the example site in site-config/."""
    handle = PolicyRepo(tmp_path / "repo", with_policies=False)
    shutil.copytree(EXAMPLE_SITE, handle.path / "site-config")
    handle.base = handle.commit("the example site")
    return handle


def _diff(repo: PolicyRepo, rev: str | None = None) -> ConfigDiff:
    """The working tree's site-config against ``rev`` (default: the example site)."""
    return _diff_at(repo.path / "site-config", rev or repo.base)


def _diff_at(site: Path, rev: str) -> ConfigDiff:
    return against_base(site, rev, None, compile_desired(site).supply)


def _ids(entries: Any) -> list[str]:
    return [e.id for e in entries]


def _entries(found: ConfigDiff) -> EntriesDiff:
    assert found.entries is not None, found.notes
    return found.entries


def _opcodes(found: ConfigDiff) -> list[tuple[str, str, tuple[str, ...], str | None]]:
    assert found.review is not None, found.notes
    return [(d.subject, d.what, d.items, d.escalation) for d in found.review.changes]


def _hosts(first: int, last: int) -> list[str]:
    return [f"cn{i:04d}" for i in range(first, last + 1)]


def test_hosts_added_to_a_group(repo: PolicyRepo) -> None:
    repo.edit("site-config/hosts/cpu.yaml", CPU_B, "    hosts: cn[0513-0964]")
    repo.commit("four more AMD nodes")
    found = _diff(repo)
    new = _hosts(961, 964)
    assert _ids(_entries(found).added) == [
        *(f"counter/mem@host/{h}" for h in new), *(f"counter/slots@host/{h}" for h in new),
        *(f"host/{h}" for h in new)]
    assert _entries(found).removed == ()
    assert [(c.entry.id, c.fields) for c in _entries(found).changed] == [
        ("host-group/cpu-b", (FieldChange("attributes.hosts", "cn[0513-0960]",
                                          "cn[0513-0964]"),))]
    assert found.settings == () and _opcodes(found) == [] and found.notes == ()


def test_a_pool_removed(repo: PolicyRepo) -> None:
    repo.edit("site-config/pools.yaml", "    - name: ansys\n      description: ANSYS HPC packs\n"
              "      amount: 16\n", "")
    repo.commit("no more ANSYS")
    found = _diff(repo)
    assert _ids(_entries(found).removed) == ["license/ansys@site"]
    assert _entries(found).added == () and _entries(found).changed == ()


def test_a_quota_resized(repo: PolicyRepo) -> None:
    repo.edit("site-config/storage/quotas.yaml", "alice: 2TiB", "alice: 3TiB")
    repo.commit("alice needs room")
    (change,) = _entries(_diff(repo)).changed
    assert change.entry.id == "quota/shared/user/alice"
    assert change.fields == (FieldChange("amount", 2 * TIB, 3 * TIB),)


def test_a_role_gains_and_loses_opcodes(repo: PolicyRepo) -> None:
    repo.edit("site-config/policy.yaml", "allow: [host.query, supply.query]",
              "allow: [host.query, job.query]")
    repo.commit("the monitor reads jobs, not supply")
    found = _diff(repo)
    assert len(_entries(found)) == 0 and found.settings == ()
    assert _opcodes(found) == [
        ("site-monitor", "gained", ("job.query",), None),
        ("site-monitor", "lost", ("supply.query",), None)]


def test_a_planning_setting_changed(repo: PolicyRepo) -> None:
    repo.edit("site-config/site.yaml", "max_changes: 5000", "max_changes: 6000")
    repo.commit("bigger changes")
    found = _diff(repo)
    assert len(_entries(found)) == 0
    assert found.settings == (FieldChange("safety.max_changes", 5000, 6000),)


def test_a_file_moved_between_folders_changes_nothing(repo: PolicyRepo) -> None:
    repo.repo.git.mv("site-config/hosts/gpu.yaml", "site-config/storage/gpu-nodes.yaml")
    repo.commit("move the GPU nodes' file")
    found = _diff(repo)
    assert not found.has_changes
    assert len(_entries(found)) == 0 and found.settings == () and _opcodes(found) == []


def test_a_change_of_policies_only_compiles_no_base(repo: PolicyRepo,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The site folder's tree is the same at the base and at a clean HEAD: its map is the
    head's, so the base is not compiled (a 100,000-host compile saved); the opcodes are."""
    shutil.copytree(POLICIES, repo.path / "policies")
    base = repo.commit("the site's own policies")
    repo.edit("policies/roles.yaml", "      - job.requeue\n", "      - job.requeue\n"
              "      - job.kill\n")
    repo.commit("the scheduler may kill jobs")

    def no_compile(*args: object, **kwargs: object) -> None:
        raise AssertionError("the base's site folder was compiled")

    monkeypatch.setattr(site_at, "compile_files", no_compile)
    found = _diff(repo, base)
    assert len(_entries(found)) == 0 and found.settings == () and found.notes == ()
    assert _opcodes(found) == [("scheduler", "gained", ("job.kill",), None)]
    repo.edit("site-config/storage/quotas.yaml", "bob: 4TiB", "bob: 8TiB")  # dirty: compiled
    with pytest.raises(AssertionError, match="was compiled"):
        _diff(repo, base)


def test_the_working_tree_is_the_head(repo: PolicyRepo) -> None:
    """Not committed yet: the diff is of what the plan plans, labelled so."""
    repo.edit("site-config/storage/quotas.yaml", "bob: 4TiB", "bob: 8TiB")
    found = _diff(repo, "HEAD")
    assert _ids(c.entry for c in _entries(found).changed) == ["quota/shared/user/bob"]
    assert found.head == "the working tree"
    assert found.label == f"HEAD, {repo.base[:12]}"
    assert _diff(repo, repo.base).label == repo.base[:12]  # a commit id is named once


def test_canonical_json_tells_values_python_thinks_equal() -> None:
    """``1 == True`` in Python; the digest's bytes differ, and so does the config."""
    def host(rack: Any, features: list[str]) -> Entry:
        return Entry("host/a", "host", "available", "config",
                     attributes={"rack": rack, "topo": {"row": 1, "features": features}})
    found = diff_entries({"host/a": host(1, ["x"])}, {"host/a": host(True, ["x", "y"])})
    assert [(f.path, f.before, f.after) for f in found.changed[0].fields] == [
        ("attributes.rack", 1, True), ("attributes.topo.features", ["x"], ["x", "y"])]
    assert not diff_entries({"host/a": host(1, ["x"])}, {"host/a": host(1, ["x"])})


def test_git_and_folder_loaders_read_the_same_files(repo: PolicyRepo) -> None:
    """One rule: hidden files and folders, a virtualenv, the site's policies/ are skipped
    by both; YAML in any other folder is read by both."""
    site = repo.path / "site-config"
    for rel in ("venv/pyvenv.cfg", "venv/lib/x.yaml", ".hidden/a.yaml", "hosts/.b.yaml",
                f"{SITE_POLICIES}/opcodes.yaml", "extra/deep/c.yml", "notes/policies/d.yaml"):
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text("version: 1\n")
    commit = repo.repo.commit(repo.commit("files of every kind"))
    on_disk = {p.relative_to(repo.path).as_posix() for p in find_yaml_files(site)}
    in_git = set(yaml_blobs(commit, "site-config", skip=SITE_POLICIES))
    assert in_git == on_disk
    assert {"site-config/extra/deep/c.yml", "site-config/notes/policies/d.yaml"} <= in_git
    assert not {p for p in in_git if "/venv/" in p or "/." in p or "/policies/op" in p}


def test_a_base_that_does_not_compile_is_a_note(repo: PolicyRepo) -> None:
    repo.edit("site-config/hosts/gpu.yaml", "    hosts: gn[001-032]", "    hosts: [gn001")
    broken = repo.commit("a broken file")
    repo.edit("site-config/hosts/gpu.yaml", "    hosts: [gn001", "    hosts: gn[001-032]")
    repo.edit("site-config/policy.yaml", "allow: [host.query, supply.query]",
              "allow: [host.query, supply.query, job.query]")
    repo.commit("fixed, and the monitor reads jobs")
    found = _diff(repo, broken)
    assert found.entries is None and not found.settings
    (note,) = found.notes
    assert note.startswith(f"the site does not compile at {broken[:12]} (1 error(s): "
                           "site-config/hosts/gpu.yaml:6:13: error[XCE001]: YAML syntax error")
    assert "its entries are not compared" in note
    assert [o[:2] for o in _opcodes(found)] == [("site-monitor", "gained")]


def test_a_new_site_is_all_added(tmp_path: Path) -> None:
    handle = PolicyRepo(tmp_path / "repo", with_policies=False)  # the base: a README only
    shutil.copytree(EXAMPLE_SITE, handle.path / "site-config")
    handle.commit("the site")
    found = _diff(handle, handle.base)
    assert len(_entries(found).added) == len(compile_desired(EXAMPLE_SITE).supply.entries)
    assert found.notes == (f"the site folder site-config holds no site-config at "
                           f"{handle.base[:12]}: every entry is new",)


def _clone(source: Path, dest: Path, *options: str) -> Path:
    subprocess.run(["git", "clone", "-q", *options, source.as_uri(), str(dest)], check=True)
    return dest


def test_a_shallow_clone_without_the_base(repo: PolicyRepo, tmp_path: Path) -> None:
    repo.edit("site-config/storage/quotas.yaml", "alice: 2TiB", "alice: 3TiB")
    repo.commit("alice needs room")
    clone = _clone(repo.path, tmp_path / "ci", "--depth", "1")
    with pytest.raises(UserError) as raised:
        _diff_at(clone / "site-config", repo.base)
    (problem,) = raised.value.problems
    assert problem.code == codes.BASE_NOT_FOUND and problem.subject == repo.base
    assert f"'{repo.base}' is not in the repository" in problem.message
    assert "a shallow clone" in problem.message
    assert problem.hint.startswith("fetch the history: fetch-depth: 0 in actions/checkout")
    with pytest.raises(UserError) as raised:  # a remote branch gets its own fetch command
        _diff_at(clone / "site-config", "origin/release")
    assert raised.value.problems[0].hint.endswith("or git fetch origin release")
    full = _clone(repo.path, tmp_path / "full")  # the same clone with history has it
    assert _ids(c.entry for c in _entries(_diff_at(full / "site-config", repo.base)).changed) \
        == ["quota/shared/user/alice"]


def test_a_name_that_is_nowhere(repo: PolicyRepo) -> None:
    with pytest.raises(UserError) as raised:
        _diff(repo, "origin/nope")
    (problem,) = raised.value.problems
    assert "shallow" not in problem.message
    assert problem.hint == ("check the name (git branch -a lists the branches), or fetch it: "
                            "git fetch origin origin/nope")


def test_a_site_outside_git(tmp_path: Path) -> None:
    site = shutil.copytree(EXAMPLE_SITE, tmp_path / "site")
    with pytest.raises(UserError) as raised:
        _diff_at(site, "main")
    (problem,) = raised.value.problems
    assert problem.code == codes.BASE_NOT_IN_GIT
    assert problem.message.startswith(f"the site folder {site} is not in a git repository")


# --- xce-plan --base through its main() ---------------------------------------------------


def _plan(repo: PolicyRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str],
          monkeypatch: pytest.MonkeyPatch, *args: str) -> CliRun:
    ws = Workspace(site=repo.path / "site-config", workdir=tmp_path / "work")
    return run_plan(ws, capsys, monkeypatch, "--live", str(EMPTY_LIVE), *args)


def _changed_head(repo: PolicyRepo) -> str:
    """A pull request's head: hosts added, a pool removed, a quota resized, a new opcode."""
    repo.edit("site-config/hosts/cpu.yaml", CPU_B, "    hosts: cn[0513-0964]")
    repo.edit("site-config/pools.yaml", "    - name: ansys\n      description: ANSYS HPC packs\n"
              "      amount: 16\n", "")
    repo.edit("site-config/storage/quotas.yaml", "alice: 2TiB", "alice: 3TiB")
    repo.edit("site-config/policy.yaml", "allow: [host.query, supply.query]",
              "allow: [host.query, supply.query, job.query]")
    return repo.commit("the pull request")


def _stable(text: str, *commits: str) -> str:
    for i, commit in enumerate(commits):
        text = text.replace(commit[:12], f"<commit{i}>")
    return text


def test_markdown_shows_the_config_beside_the_cluster(
        repo: PolicyRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, snapshot: SnapshotAssertion) -> None:
    head = _changed_head(repo)
    monkeypatch.setenv("BURST_API_TOKEN", "s3cr3t-burst-token")
    run = _plan(repo, tmp_path, capsys, monkeypatch, "--base", repo.base, "--format",
                "markdown")
    plain = _plan(repo, tmp_path, capsys, monkeypatch, "--format", "markdown")
    assert run.code == plain.code == 2, run.err
    config, cluster = run.out.split("\n## What the cluster will get\n\n")
    assert config.startswith(f"## What the config changes (against {repo.base[:12]})\n")
    assert cluster.startswith(plain.out.splitlines()[0])  # the plan as without --base
    assert len(run.out) <= LIMIT < GITHUB_LIMIT
    assert "s3cr3t" not in run.out + run.err
    assert _stable(config, repo.base, head) == snapshot


def test_json_has_a_config_diff_member(repo: PolicyRepo, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    head = _changed_head(repo)
    run = _plan(repo, tmp_path, capsys, monkeypatch, "--base", "main~1", "--format", "json")
    plain = _plan(repo, tmp_path, capsys, monkeypatch, "--format", "json")
    assert run.code == plain.code == 2
    doc = orjson.loads(run.out)
    found = doc.pop("config_diff")
    assert doc == orjson.loads(plain.out)  # the plan document is unchanged beside it
    assert found["base"] == {"rev": "main~1", "commit": repo.base}
    assert found["head"] == head[:12] and found["compared"] is True
    assert found["summary"] == {"added": 12, "removed": 1, "changed": 2, "settings": 0,
                                "opcodes": 1, "escalations": 0}
    assert found["removed"] == ["license/ansys@site"]
    assert found["changed"][1] == {"id": "quota/shared/user/alice", "kind": "quota", "fields": [
        {"path": "amount", "before": 2 * TIB, "after": 3 * TIB}]}
    assert found["opcodes"]["changes"][0]["items"] == ["job.query"]


def test_text_has_a_section_after_the_plan(repo: PolicyRepo, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    _changed_head(repo)
    run = _plan(repo, tmp_path, capsys, monkeypatch, "--base", repo.base)
    assert run.code == 2
    plan, section = run.out.split(f"\nWhat the config changes (against {repo.base[:12]}): ")
    assert plan.rstrip().endswith("to destroy.")
    assert section.splitlines()[:5] == [
        "12 entries added, 1 removed, 2 changed",
        "  - 1 license: license/ansys@site",
        '  ~ 1 host-group: host-group/cpu-b: attributes.hosts',
        '      ~ host-group/cpu-b  attributes.hosts: "cn[0513-0960]" → "cn[0513-0964]"',
        "  ~ 1 quota: quota/shared/user/alice: amount"]
    assert "  + 4 host: host/cn[0961-0964] (group cpu-b)" in section
    assert "  + job.query (105, read)" in section


def test_github_annotations_are_followed_by_the_section(
        repo: PolicyRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _changed_head(repo)
    run = _plan(repo, tmp_path, capsys, monkeypatch, "--base", repo.base, "--format", "github")
    plain = _plan(repo, tmp_path, capsys, monkeypatch, "--format", "github")
    assert run.code == plain.code == 2
    assert run.out.startswith(plain.out + "\nWhat the config changes (against ")


@pytest.mark.parametrize("fmt", ["json", "markdown", "text"])
def test_a_missing_base_is_an_error_in_the_format_asked_for(
        repo: PolicyRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    clone = _clone(repo.path, tmp_path / "ci", "--depth", "1")
    ws = Workspace(site=clone / "site-config", workdir=tmp_path / "work")
    run = run_plan(ws, capsys, monkeypatch, "--live", str(EMPTY_LIVE), "--base",
                   "origin/main~3", "--format", fmt)
    assert run.code == 1
    assert f"error[{codes.BASE_NOT_FOUND}]: the base revision 'origin/main~3'" in run.err
    assert "fetch-depth: 0" in run.err and "or git fetch origin main\n" in run.err
    assert "Traceback" not in run.err
    if fmt == "json":
        assert [p["code"] for p in orjson.loads(run.out)["problems"]] == [codes.BASE_NOT_FOUND]
    elif fmt == "markdown":
        assert codes.BASE_NOT_FOUND in run.out and "fetch-depth: 0" in run.out
    else:
        assert run.out == ""


def test_base_needs_the_site_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "build"
    from compiler.cmds import compile as compile_cli
    assert compile_cli.main([str(EXAMPLE_SITE), "--out", str(out)]) == 0
    capsys.readouterr()
    code = plan_cli.main(["--desired", str(out / "supply-map.json"), "--live", str(EMPTY_LIVE),
                          "--workdir", str(tmp_path / "w"), "--base", "main"])
    assert code == 1
    assert "--base compiles the site folder at REV" in capsys.readouterr().err


def test_a_big_change_shares_the_comment(repo: PolicyRepo, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """3,000 new hosts: the config diff and the plan are both cut, each with its note,
    and the whole stays within the budget GitHub's limit leaves room for."""
    repo.write("site-config/hosts/many.yaml", "version: 1\nhost_groups:\n  - name: many\n"
               "    hosts: mx[0001-3000]\n")
    repo.commit("many hosts")
    run = _plan(repo, tmp_path, capsys, monkeypatch, "--base", repo.base, "--format",
                "markdown", "--force")
    assert run.code == 2, run.err
    config, cluster = run.out.split("\n## What the cluster will get\n\n")
    assert len(run.out) <= LIMIT
    assert re.search(r"> \*\*Truncated:\*\* \d+ entries are not shown one by one to keep "
                     r"this section",
                     config)
    assert "`xce-plan --base " in config
    assert "<summary>+ 3000 host: host/mx[0001-3000] (group many)</summary>" in config
    assert "**Truncated:**" in cluster and len(config) >= 15_000
