"""``xce-plan --format github`` (issue 11 §3): annotations on the site-config lines of the
entries a plan destroys (``::warning``, first) or changes (``::notice``), grouped per line,
within GitHub's 10 annotations of each level per step, paths relative to the repository's
top. The example site is applied once with its embedded providers; each test plans an
edited copy of it through ``xce-plan``'s main(), and finds the expected lines in the
edited files' text."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import git
import pytest
from syrupy.assertion import SnapshotAssertion

import reconciler.cmds.apply as apply_cli
import reconciler.cmds.plan as plan_cli
from compiler.cmds import compile as compile_cli
from tests.conftest import EXAMPLE_SITE
from tests.e2e.scenario import build, load_scenario
from tests.e2e.workspace import CliRun, Workspace, run_cli_main, run_plan

ODD = "odd,na:me%.yaml"  # a site file whose name needs escaping in a property
EXTRA = 12  # small host groups in it, one line each: more than GitHub shows


def _extra_groups() -> str:
    groups = "".join(f"  - name: extra-{g:02d}\n    hosts: ex{g:02d}n[1-2]\n"
                     for g in range(1, EXTRA + 1))
    return f"version: 1\nhost_groups:\n{groups}"


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository holding the example site and ``ODD``'s groups under ``site/``,
    applied with the embedded providers (their state in site/.xce)."""
    top = tmp_path_factory.mktemp("applied") / "repo"
    site = top / "site"
    shutil.copytree(EXAMPLE_SITE, site, ignore=shutil.ignore_patterns(".xce", "build"))
    (site / "hosts" / ODD).write_text(_extra_groups())
    git.Repo.init(top)
    with pytest.MonkeyPatch.context() as m:
        m.setenv("BURST_API_TOKEN", "x")
        assert apply_cli.main([str(site), "--auto-approve"]) == 0
    return top


@pytest.fixture
def repo(applied: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the applied repository, the current folder."""
    top = tmp_path / "repo"
    shutil.copytree(applied, top, symlinks=True)
    monkeypatch.setenv("BURST_API_TOKEN", "x")
    monkeypatch.chdir(top)
    return top


@dataclass(frozen=True, slots=True)
class Annotation:
    level: str
    props: dict[str, str]
    message: str

    def place(self) -> tuple[str, int, int] | None:
        if "file" not in self.props:
            return None
        return self.props["file"], int(self.props["line"]), int(self.props["col"])


_COMMAND = re.compile(r"::(error|warning|notice)(?: ([^:]*))?::(.*)")


def _unescape(text: str) -> str:
    for code, char in (("%0A", "\n"), ("%0D", "\r"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        text = text.replace(code, char)
    return text


def annotations_in(out: str) -> list[Annotation]:
    found = []
    for line in out.splitlines():
        m = _COMMAND.fullmatch(line)
        if m:
            props = dict(p.split("=", 1) for p in (m[2] or "").split(",") if p)
            found.append(Annotation(m[1], {k: _unescape(v) for k, v in props.items()},
                                    _unescape(m[3])))
    return found


def _at(path: Path, text: str, word: str) -> tuple[int, int]:
    """Line and column of ``word`` in the one line of ``path`` that reads ``text``."""
    lines = path.read_text().splitlines()
    [n] = [i for i, line in enumerate(lines) if line == text]
    return n + 1, lines[n].index(word) + 1


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


def _plan(top: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
          *args: str) -> CliRun:
    ws = Workspace(top / "site", top / "site" / ".xce")
    return run_cli_main(plan_cli.main, ws, capsys, monkeypatch, "--format", "github", *args)


def _edit_example(site: Path) -> None:
    """Hosts removed from cpu-a's hostlist, bob's quota raised, a license pool removed, and
    the rack of cpu-a's overridden hosts set to a text that needs escaping."""
    _edit(site / "hosts" / "cpu.yaml", "hosts: cn[0001-0512]", "hosts: cn[0001-0500]")
    _edit(site / "hosts" / "cpu.yaml", "        counters: {mem: 1TiB}\n",
          '        counters: {mem: 1TiB}\n        rack: "A%1,2:x"\n')
    _edit(site / "storage" / "quotas.yaml", "      bob: 4TiB", "      bob: 5TiB")
    _edit(site / "pools.yaml", "    - name: ansys\n      description: ANSYS HPC packs\n"
          "      amount: 16\n", "")


def test_destroys_and_changes_are_annotated_at_their_lines(
        repo: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    site = repo / "site"
    _edit_example(site)
    run = _plan(repo, capsys, monkeypatch, "--destroy")
    assert run.code == 2, run.err
    found = annotations_in(run.out)
    cpu, quotas = site / "hosts" / "cpu.yaml", site / "storage" / "quotas.yaml"
    assert [(a.level, a.place()) for a in found] == [
        ("warning", ("site/hosts/cpu.yaml", *_at(cpu, "  - name: cpu-a", "name"))),
        ("warning", None),  # the license pool: neither it nor anything it belonged to is left
        ("notice", ("site/hosts/cpu.yaml", *_at(cpu, "      cn[0001-0004]:", "cn"))),
        ("notice", ("site/storage/quotas.yaml", *_at(quotas, "      bob: 5TiB", "bob"))),
    ]
    group, pool, overridden, quota = found
    assert group.props["title"] == "xce-plan: delete 24, release 12, update 1"
    assert group.message.splitlines() == [
        "- delete 24 counter [controller]: counter/mem@host/cn[0501-0512], "
        "counter/slots@host/cn[0501-0512]",
        "- release 12 host [controller]: host/cn[0501-0512] (group cpu-a)",
        "~ update 1 host-group [controller]: host-group/cpu-a",
        '    attributes.hosts: "cn[0001-0512]" → "cn[0001-0500]"',
        "Entries not in the config any more are shown at the item they belonged to."]
    assert pool.message.splitlines()[0] == "- delete 1 license [controller]: license/ansys@site"
    assert overridden.message.splitlines() == [
        "~ update 4 host [controller]: host/cn[0001-0004] (group cpu-a)",
        '    attributes.topology.rack: "A" → "A%1,2:x"']
    assert quota.message.splitlines() == [
        "~ update 1 quota [shared-fs]: quota/shared/user/bob",
        "    amount: 4398046511104 → 5497558138880"]
    assert run.out.splitlines()[-1] == "Plan: 0 to add, 6 to change, 37 to destroy."


def test_a_saved_plan_shown_again_has_the_plan_runs_annotations(
        repo: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The pipeline posts the markdown of its plan run and annotates from ``--show`` on the
    saved plan: the annotations must be the plan run's own, without a second inventory."""
    _edit_example(repo / "site")
    planned = _plan(repo, capsys, monkeypatch, "--destroy", "--out", str(repo / "plan.json"))
    assert planned.code == 2, planned.err
    assert plan_cli.main(["--show", str(repo / "plan.json"), "--format", "github"]) == 2
    shown = capsys.readouterr().out
    assert len(annotations_in(shown)) == 4 and shown == planned.out
    assert plan_cli.main(["--show", str(repo / "plan.json"), "--live", "x.json"]) == 1
    assert "--show renders a saved plan as it is" in capsys.readouterr().err


def test_escaping_of_data_and_properties(repo: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """% , and : in a property (the file name, the title) and % in the data, as GitHub's
    runner reads them: escaped, never ending a property or the command early."""
    _edit(repo / "site" / "hosts" / ODD, "hosts: ex01n[1-2]", "hosts: ex01n1")
    _edit(repo / "site" / "hosts" / "cpu.yaml", "        counters: {mem: 1TiB}\n",
          '        counters: {mem: 1TiB}\n        rack: "A%1,2:x"\n')
    run = _plan(repo, capsys, monkeypatch, "--destroy")
    lines = [line for line in run.out.splitlines() if line.startswith("::")]
    line, col = _at(repo / "site" / "hosts" / ODD, "  - name: extra-01", "name")
    assert lines[0] == (
        f"::warning file=site/hosts/odd%2Cna%3Ame%25.yaml,line={line},col={col},"
        "title=xce-plan%3A delete 2%2C release 1%2C update 1::- delete 2 counter [controller]: "
        "counter/mem@host/ex01n2, counter/slots@host/ex01n2%0A- release 1 host [controller]: "
        "host/ex01n2 (group extra-01)%0A~ update 1 host-group [controller]: host-group/extra-01"
        '%0A    attributes.hosts: "ex01n[1-2]" → "ex01n1"%0AEntries not in the config any '
        "more are shown at the item they belonged to.")
    assert lines[1].endswith('::~ update 4 host [controller]: host/cn[0001-0004] (group cpu-a)'
                             '%0A    attributes.topology.rack: "A" → "A%251,2:x"')


def test_more_destroyed_lines_than_github_shows_end_with_a_summary(
        repo: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """13 lines with destroys: the plan's own warning (a guard forced) and 8 of them are
    shown, then the summary: 10 warnings, what GitHub shows of one level in a step."""
    cpu, odd = repo / "site" / "hosts" / "cpu.yaml", repo / "site" / "hosts" / ODD
    _edit(cpu, "hosts: cn[0001-0512]", "hosts: cn[0001-0300]")  # with the 12: 21 % of hosts
    for g in range(1, EXTRA + 1):
        _edit(odd, f"hosts: ex{g:02d}n[1-2]", f"hosts: ex{g:02d}n1")
    _edit(repo / "site" / "storage" / "quotas.yaml", "      bob: 4TiB", "      bob: 5TiB")
    run = _plan(repo, capsys, monkeypatch, "--destroy", "--force")
    assert run.code == 2, run.err
    found = annotations_in(run.out)
    assert [a.level for a in found] == ["warning"] * 9 + ["notice", "warning"]
    guard, *destroys, change, summary = found
    assert guard.props == {"title": "XCE751"} and "(21%)" in guard.message
    assert [a.place() for a in destroys] == [
        ("site/hosts/cpu.yaml", *_at(cpu, "  - name: cpu-a", "name")),
        *[("site/hosts/odd,na:me%.yaml", *_at(odd, f"  - name: extra-{g:02d}", "name"))
          for g in range(1, 8)]]
    assert change.props["file"] == "site/storage/quotas.yaml"  # notices: a limit of their own
    assert summary.place() is None and summary.props["title"] == "xce-plan: 5 more lines"
    assert summary.message.startswith("5 more site-config lines with destroys or changes")

    run = _plan(repo, capsys, monkeypatch, "--destroy")  # not forced: the guard refuses
    assert run.code == 1
    assert run.out.startswith("::error title=XCE751::host: the plan removes 224 of ")
    assert run.out.splitlines()[-2:] == [
        "Plan: 0 to add, 14 to change, 672 to destroy.",
        "This plan is refused by a guard (the errors above) and cannot be applied."]


def test_paths_are_relative_to_the_repository_top_from_another_folder(
        repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _edit(repo / "site" / "storage" / "quotas.yaml", "      bob: 4TiB", "      bob: 5TiB")
    where = ("site/storage/quotas.yaml",
             *_at(repo / "site" / "storage" / "quotas.yaml", "      bob: 5TiB", "bob"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    [quota] = annotations_in(_plan(repo, capsys, monkeypatch).out)
    assert quota.place() == where
    monkeypatch.chdir(repo / "site" / "hosts")
    [quota] = annotations_in(_plan(repo, capsys, monkeypatch).out)
    assert quota.place() == where
    # a checkout without .git (actions/checkout without git): relative to the workspace
    shutil.rmtree(repo / ".git")
    monkeypatch.setenv("GITHUB_WORKSPACE", str(repo))
    [quota] = annotations_in(_plan(repo, capsys, monkeypatch).out)
    assert quota.place() == where


def test_a_plan_from_a_compiled_map_has_annotations_without_a_file(
        repo: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _edit_example(repo / "site")
    assert compile_cli.main(["site", "--out", "build"]) == 0
    capsys.readouterr()
    code = plan_cli.main(["--desired", "build/supply-map.json", "--workdir", "site/.xce",
                          "--format", "github", "--destroy"])
    found = annotations_in(capsys.readouterr().out)
    assert code == 2
    assert [(a.level, a.place()) for a in found] == [("warning", None), ("notice", None)]
    assert "host/cn[0501-0512]" in found[0].message
    assert "license/ansys@site" in found[0].message
    assert "not in the config" not in found[0].message  # the plan knows no config to say so


def test_a_plan_of_only_creates_has_no_annotation(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "repo" / "site"
    shutil.copytree(EXAMPLE_SITE, site, ignore=shutil.ignore_patterns(".xce", "build"))
    monkeypatch.chdir(tmp_path / "repo")
    run = _plan(tmp_path / "repo", capsys, monkeypatch)
    assert run.code == 2, run.err
    assert run.out == "Plan: 3297 to add, 0 to change, 0 to destroy.\n"


def test_a_failing_plan_still_writes_its_github_document(
        repo: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An invalid site: the compiler's problems as error annotations, paths from the top."""
    cpu = repo / "site" / "hosts" / "cpu.yaml"
    _edit(cpu, "    topology: {rack: A,", "    topology: {rack: [A,")
    monkeypatch.chdir(repo / "site")
    run = _plan(repo, capsys, monkeypatch)
    assert run.code == 1
    [error] = annotations_in(run.out)
    assert error.level == "error" and error.props["file"] == "site/hosts/cpu.yaml"
    assert error.props["title"].startswith("XCE")


def test_no_secret_reaches_an_annotation(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The provider echoes its token in the instances the plan updates and releases."""
    ws = build(load_scenario("secret_echoed"), tmp_path, monkeypatch)
    run = run_plan(ws, capsys, monkeypatch, "--format", "github")
    assert run.code == 2, run.err
    token = ws.env["XCE_TEST_TOKEN"]
    assert token not in run.out and token not in run.err
    [burst] = annotations_in(run.out)
    assert '    attributes.api_token: "(sensitive)" → null' in burst.message.splitlines()


def test_a_small_github_document(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch,
                                 snapshot: SnapshotAssertion) -> None:
    """A small site's running host cn04, dropped from its group, is drained."""
    git.Repo.init(tmp_path)
    monkeypatch.chdir(tmp_path)
    ws = build(load_scenario("host_removed_drain"), tmp_path, monkeypatch)
    run = run_plan(ws, capsys, monkeypatch, "--format", "github")
    assert run.code == 2, run.err
    assert [a.level for a in annotations_in(run.out)] == ["notice"]  # a drain is a change
    assert run.out == snapshot
