"""Datasets are immutable (PR-5): a real site is applied, then its datasets.yaml edited.

A changed digest or size of an applied ``name@version`` stops xce-plan and xce-apply at the
place of the digest (or size); a correction with a reason goes through and says why; a new
version, or a version never applied, plans as before.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import compiler.cmds.compile as compile_cli
import reconciler.cmds.apply as apply_cli
import reconciler.cmds.digest as digest_cli
import reconciler.cmds.plan as plan_cli
from reconciler.pipeline import compile_desired, gather
from reconciler.providers.dataset_digest import dataset_digest
from tests.e2e.workspace import SCENARIOS, SITES, CliRun, materialize

TINY = "sha256:47f2efc88d22e937d32e92fdfe8b93a59403fab9310b1380fd2013fffb26dda5"
REASON = "a.txt of the first upload was truncated"


def _materialize(root: Path) -> Path:
    return materialize(root / "site", SITES / "base", SCENARIOS / "fresh_site" / "site-config")


class Site:
    """The e2e base site (``root/site``), its workdir (``root/work``) and the real CLIs."""

    def __init__(self, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.dir = root / "site"
        self.work = root / "work"
        self.capsys = capsys
        self.datasets = self.dir / "datasets.yaml"

    def _run(self, main: Callable[[list[str]], int], *args: str) -> CliRun:
        self.capsys.readouterr()
        code = main([str(self.dir), "--workdir", str(self.work), *args])
        out, err = self.capsys.readouterr()
        return CliRun(code, out, err)

    def plan(self, *args: str) -> CliRun:
        return self._run(plan_cli.main, *args)

    def apply(self, *args: str) -> CliRun:
        return self._run(apply_cli.main, "--auto-approve", *args)

    def edit(self, old: str, new: str) -> None:
        text = self.datasets.read_text()
        assert text.count(old) == 1, old
        self.datasets.write_text(text.replace(old, new))

    def place(self, text: str, after: str = "") -> str:
        """``datasets.yaml:LINE:COL`` of ``text`` (the first after ``after``), 1-based."""
        lines = self.datasets.read_text().splitlines()
        start = next(i for i, line in enumerate(lines) if after in line)
        for i in range(start, len(lines)):
            if text in lines[i]:
                return f"datasets.yaml:{i + 1}:{lines[i].index(text) + 1}"
        raise AssertionError(text)

    def new_bytes(self, folder: str = "tiny@1") -> str:
        """FieldChange the dataset's source files; their new digest, from xce-digest as an admin
        gets it (staging then verifies the copy against it)."""
        source = self.dir / "sample-data" / folder
        with (source / "a.txt").open("a") as f:
            f.write("the rest of the file\n")
        self.capsys.readouterr()
        assert digest_cli.main([str(source)]) == 0
        digest, shown = self.capsys.readouterr().out.split()
        assert shown == str(source)
        return digest


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site applied once by xce-apply; each test gets a copy (state holds no paths)."""
    root = tmp_path_factory.mktemp("applied")
    _materialize(root)
    assert apply_cli.main([str(root / "site"), "--workdir", str(root / "work"),
                           "--auto-approve", "--format", "json"]) == 0
    return root


@pytest.fixture
def site(applied: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Site:
    shutil.copytree(applied, tmp_path, symlinks=True, dirs_exist_ok=True)
    s = Site(tmp_path, capsys)
    assert s.plan().code == 0  # in sync: tiny@1 is applied with TINY and 2KiB
    return s


def _correction(digest: str = TINY, size: str = "2KiB", reason: str = REASON) -> str:
    return (f'\n    correction:\n      reason: "{reason}"\n'
            f"      replaces: {{digest: {digest}, size: {size}}}")


def _actions(run: CliRun) -> dict[str, dict[str, Any]]:
    return {a["id"]: a for a in json.loads(run.out)["actions"]}


def _datasets_in_the_map(site: Site) -> Any:
    """The gpu group's ``datasets`` as the controller map holds it after the apply."""
    live = gather(compile_desired(site.dir), site.work).supply
    return live.entries["host-group/gpu"].attributes.get("datasets")


def test_changed_digest_of_an_applied_version_is_refused_at_the_digest(site: Site) -> None:
    digest = site.new_bytes()
    site.edit(TINY, digest)
    for args in ((), ("--format", "json")):
        run = site.plan(*args)
        assert run.code == 1  # nothing planned, nothing shown as a plan; json: the problem
        assert run.out == "" if not args else \
            [p["code"] for p in json.loads(run.out)["problems"]] == ["XCE790"]
        first, hint = run.err.splitlines()[:2]
        assert f"{site.place(digest)}: error[XCE790]: tiny@1 was applied with digest {TINY} " \
               "and size 2KiB (dataset/tiny@1 at provider controller)" in first
        assert "its digest cannot change" in first
        assert "add a new version of tiny" in hint
        assert f"replaces: {{digest: {TINY}, size: 2KiB}}" in hint
    run = site.apply()
    assert run.code == 1 and f"{site.place(digest)}: error[XCE790]" in run.err
    assert "Traceback" not in run.err
    site.edit(digest, TINY)
    assert site.plan().code == 0  # the refused apply changed nothing
    assert site.apply().code == 0  # and it released the site's lock


def test_changed_size_is_refused_at_the_size(site: Site) -> None:
    site.edit("size: 2KiB", "size: 3KiB")
    run = site.plan()
    assert run.code == 1
    assert f"{site.place('3KiB')}: error[XCE790]: tiny@1 was applied with digest {TINY} and " \
           "size 2KiB" in run.err
    assert "its size cannot change" in run.err


def test_both_changed_point_at_the_digest_and_the_size(site: Site) -> None:
    digest = site.new_bytes()
    site.edit(TINY, digest)
    site.edit("size: 2KiB", "size: 3KiB")
    run = site.plan()
    assert run.code == 1
    assert f"{site.place(digest)}: error[XCE790]" in run.err
    assert "its digest and size cannot change" in run.err
    also = next(line for line in run.err.splitlines() if line.startswith("  see also: "))
    assert also.endswith(site.place("3KiB"))


def test_a_version_in_another_file_is_placed_in_that_file(site: Site) -> None:
    """Sections split across files are joined: the refusal names the file it is in."""
    text = site.datasets.read_text()
    notes = text[text.index("  - name: notes"):]
    site.datasets.write_text(text.replace(notes, ""))
    other = site.dir / "more" / "notes.yaml"
    other.parent.mkdir()
    other.write_text("version: 1\ndatasets:\n" + notes.replace("size: 1KiB", "size: 5KiB"))
    run = site.plan()
    assert run.code == 1
    assert "notes.yaml:5:11: error[XCE790]: notes@2 was applied with digest" in run.err
    assert "datasets.yaml" not in run.err


def test_a_correction_with_a_reason_updates_and_restages_saying_why(
    site: Site, tmp_path: Path
) -> None:
    digest = site.new_bytes()
    site.edit(TINY, digest + _correction())
    plan_file = tmp_path / "plan.json"
    run = site.plan("--format", "json", "--out", str(plan_file))
    assert run.code == 2, run.err
    actions = _actions(run)
    assert sorted(actions) == ["stage:dataset-copy/tiny@1@group/gpu", "update:dataset/tiny@1",
                               "update:host-group/gpu"]  # the wrong bytes are withdrawn (PR-3)
    update = actions["update:dataset/tiny@1"]
    assert f"corrected in place: {REASON}" in str(update["reason"])
    assert {"path": "spec.digest", "before": TINY, "after": digest} in update["changes"]
    assert f"tiny@1 corrected: {REASON}" in str(actions["stage:dataset-copy/tiny@1@group/gpu"]
                                                ["reason"])
    text = site.plan().out
    assert f"corrected in place: {REASON}" in text
    # The saved plan applies (the reason is in it); the next apply lists the copy again,
    # and the site is then in sync.
    site.capsys.readouterr()
    assert apply_cli.main([str(plan_file), "--site", str(site.dir), "--workdir",
                           str(site.work)]) == 0
    assert list(_actions(site.plan("--format", "json"))) == ["update:host-group/gpu"]
    assert site.apply().code == 0
    assert site.plan().code == 0
    staged = site.work / "caches" / "gpu" / "tiny@1"
    assert dataset_digest(staged) == digest  # the cache holds the corrected bytes


def test_a_correction_left_in_the_file_does_not_let_a_second_change_through(
    site: Site
) -> None:
    digest = site.new_bytes()
    site.edit(TINY, digest + _correction())
    assert site.apply().code == 0
    again = site.new_bytes()
    site.edit(f"digest: {digest}", f"digest: {again}")
    run = site.plan()
    assert run.code == 1
    # Placed at the replaced digest, the one that no longer names what is applied.
    assert f"{site.place(TINY, after='replaces')}: error[XCE791]: the correction of tiny@1 " \
           f"replaces digest {TINY} and size 2KiB, but tiny@1 was applied with digest " \
           f"{digest} and size 2KiB" in run.err
    site.edit(f"digest: {TINY}, size", f"digest: {digest}, size")  # a new correction
    assert site.plan().code == 2


@pytest.mark.parametrize(("digest", "size", "field"), [
    ("sha256:" + "0" * 64, "2KiB", "digest"),  # not what was applied
    (TINY, "4KiB", "size"),
])
def test_a_correction_must_name_what_was_applied(
    site: Site, digest: str, size: str, field: str
) -> None:
    site.edit(TINY, site.new_bytes() + _correction(digest, size))
    run = site.plan()
    assert run.code == 1
    where = site.place(digest if field == "digest" else size, after="replaces")
    assert f"{where}: error[XCE791]" in run.err
    assert f"replaces: {{digest: {TINY}, size: 2KiB}}" in run.err  # the hint says what to write


def test_a_new_version_is_planned_and_applied(site: Site) -> None:
    shutil.copytree(site.dir / "sample-data" / "tiny@1", site.dir / "sample-data" / "tiny@2")
    digest = site.new_bytes("tiny@2")
    site.edit("datasets:\n", f"""datasets:
  - name: tiny
    version: 2
    size: 2KiB
    digest: {digest}
    source: tiny@2
    copies:
      - location: group/gpu
        provider: gpu-cache
""")
    run = site.plan("--format", "json")
    assert run.code == 2, run.err
    actions = _actions(run)
    assert sorted(actions) == ["create:dataset/tiny@2", "stage:dataset-copy/tiny@2@group/gpu",
                               "update:host-group/gpu"]
    # the host group lists the new copy only once it is staged (PR-3 locality)
    assert actions["update:host-group/gpu"]["depends_on"] == ["stage:dataset-copy/tiny@2@group/gpu"]
    assert site.apply().code == 0
    assert _datasets_in_the_map(site) == ["notes@2", "tiny@1", "tiny@2"]
    assert site.plan().code == 0


def test_a_copy_taken_out_of_config_leaves_the_map_before_the_cache(site: Site) -> None:
    """PR-3 locality: the host group stops listing notes@2, then its copy is evicted."""
    assert _datasets_in_the_map(site) == ["notes@2", "tiny@1"]
    site.edit("    source: notes-2.txt\n    copies:\n      - location: group/gpu\n"
              "        provider: gpu-cache\n", "    source: notes-2.txt\n")
    run = site.plan("--format", "json")
    assert run.code == 2, run.err
    actions = _actions(run)
    assert list(actions) == ["update:host-group/gpu", "evict:dataset-copy/notes@2@group/gpu"]
    assert actions["evict:dataset-copy/notes@2@group/gpu"]["depends_on"] == [
        "update:host-group/gpu"]
    assert site.apply("--allow-destroy").code == 0
    assert _datasets_in_the_map(site) == ["tiny@1"]
    assert not (site.work / "caches" / "gpu" / "notes@2").exists()
    assert site.plan().code == 0


def test_a_version_never_applied_may_be_edited(site: Site) -> None:
    site.edit("datasets:\n", f"""datasets:
  - name: tiny
    version: 2
    size: 2KiB
    digest: {TINY}
    source: tiny@1
""")
    assert site.plan().code == 2  # tiny@2 is to be created: nothing of it is applied
    site.edit(f"version: 2\n    size: 2KiB\n    digest: {TINY}",
              f"version: 2\n    size: 3KiB\n    digest: sha256:{'1' * 64}")
    run = site.plan("--format", "json")
    assert run.code == 2, run.err
    assert list(_actions(run)) == ["create:dataset/tiny@2"]


def test_a_site_never_applied_may_edit_every_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _materialize(tmp_path)
    s = Site(tmp_path, capsys)
    s.edit(TINY, "sha256:" + "2" * 64)
    s.edit("size: 2KiB", "size: 3KiB")
    assert s.plan().code == 2


def test_with_the_record_unknown_the_copies_still_refuse_a_change(site: Site) -> None:
    """An unknown provider is not "nothing applied": the copy at the cache tells."""
    with (site.work / "providers" / "controller" / "map.sqlite").open("r+b") as db:
        db.write(b"\0" * 16)  # the controller map cannot be read: its entries are unknown
    site.edit(TINY, site.new_bytes())
    run = site.plan()
    assert run.code == 1
    assert f"tiny@1 was applied with digest {TINY} (its copy at group/gpu (provider " \
           "gpu-cache))" in run.err
    assert "error[XCE790]" in run.err and run.out == ""


def test_with_the_record_unknown_no_copy_is_staged_under_the_name(site: Site) -> None:
    """What a copy must hold is its record's digest: while the record cannot be seen, the
    stage waits (unknown), by xce-plan and xce-apply alike."""
    with (site.work / "providers" / "controller" / "map.sqlite").open("r+b") as db:
        db.write(b"\0" * 16)
    site.edit("datasets:\n", f"""datasets:
  - name: tiny
    version: 2
    size: 2KiB
    digest: {TINY}
    source: tiny@1
    copies:
      - location: group/gpu
        provider: gpu-cache
""")
    run = site.plan("--format", "json")
    assert run.code == 1  # a provider did not report
    plan = json.loads(run.out)
    assert not [a for a in plan["actions"] if a["kind"].startswith("dataset")]
    unknown = {n["entry"]: n["reason"] for n in plan["unknown"]}
    assert unknown["dataset-copy/tiny@2@group/gpu"].startswith(
        "depends on dataset/tiny@2 (at provider controller), whose inventory is unknown")
    site.apply()
    assert not (site.work / "caches" / "gpu" / "tiny@2").exists()


def test_a_plan_from_a_compiled_map_names_the_entry(site: Site, tmp_path: Path) -> None:
    site.edit("size: 2KiB", "size: 3KiB")
    build = tmp_path / "build"
    assert compile_cli.main([str(site.dir), "--out", str(build)]) == 0  # no live map: valid
    site.capsys.readouterr()
    code = plan_cli.main(["--desired", str(build / "supply-map.json"), "--workdir",
                          str(site.work)])
    err = site.capsys.readouterr().err
    assert code == 1
    assert err.startswith("dataset/tiny@1: error[XCE790]: tiny@1 was applied with digest")


GOOD = "{digest: @D@, size: 2KiB}"  # what replaces: must say; @D@ is TINY


@pytest.mark.parametrize(("correction", "code", "text"), [
    (f"{{reason: x, replaces: {GOOD}, by: me}}", "XCE101", "unknown key 'by'"),
    (f"{{replaces: {GOOD}}}", "XCE105", "missing required key 'reason'"),
    ("{reason: x}", "XCE105", "missing required key 'replaces'"),
    ("{reason: x, replaces: {digest: @D@}}", "XCE105", "missing required key 'size'"),
    (f'{{reason: " ", replaces: {GOOD}}}', "XCE106", "a correction needs a reason"),
    (f'{{reason: "a\\u202eb", replaces: {GOOD}}}', "XCE106", "U+202E (RIGHT-TO-LEFT"),
    (f'{{reason: "two\\nlines", replaces: {GOOD}}}', "XCE106", "U+000A"),
    (f'{{reason: "two\\u2028lines", replaces: {GOOD}}}', "XCE106", "U+2028 (LINE SEPARATOR)"),
    (f"{{reason: {'x' * 501}, replaces: {GOOD}}}", "XCE106", "at most 500"),
    ("{reason: x, replaces: {digest: sha256:ABC, size: 2KiB}}", "XCE106", "wrong form"),
    ("{reason: x, replaces: {digest: @D@, size: 2 lots}}", "XCE103", "size"),
])
def test_a_malformed_correction_is_a_compile_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], correction: str, code: str, text: str
) -> None:
    _materialize(tmp_path)
    s = Site(tmp_path, capsys)
    correction = correction.replace("@D@", TINY)
    s.edit(f"digest: {TINY}", f"digest: {TINY}\n    correction: {correction}")
    capsys.readouterr()
    assert compile_cli.main([str(s.dir), "--out", str(tmp_path / "build")]) == 1
    err = capsys.readouterr().err
    assert "datasets.yaml:12:" in err and f"error[{code}]" in err and text in err, err
