"""Issue 11 §1: the plan reviewed on a pull request is the plan applied after the merge.

A real git repository (gitpython) holds the small site; ``xce-plan --record`` on a pull
request's commit keeps the plan in the state store (real SQLite and PostgreSQL), and
``xce-apply --reviewed`` on the merge commit applies exactly it — or refuses (exit 4), or
applies an unreviewed plan where the site allows it and says so.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import git
import pytest

import reconciler.cmds.apply as apply_cli
import reconciler.cmds.plan as plan_cli
from compiler.cli.runner import EXIT_STALE, EXIT_UNREVIEWED
from reconciler.apply.ops import plan_digest
from reconciler.plan.file import parse_plan
from reconciler.state.store import ReviewStatus
from tests.apply.small_site import raise_quotas, write_site
from tests.git_identity import identity
from tests.state.conftest import pg_admin, pg_target, sqlite_target, target  # noqa: F401
from tests.state.targets import Target

ACTOR = git.Actor("Site Admin", "admin@example.org")
QUOTAS = "{alice: 1TiB, bob: 2TiB}"
HOSTS = "cn[01-04]"


@dataclass(frozen=True, slots=True)
class Run:
    code: int
    out: str
    err: str


class SiteRepo:
    """The site's repository, its branches and the commands a CI job runs in it."""

    def __init__(self, root: Path, state: str | None, capsys: pytest.CaptureFixture[str]):
        self.root = root
        self.state = () if state is None else ("--state", state)
        self.capsys = capsys
        self.repo = git.Repo.init(root, initial_branch="main")
        write_site(root / "site")
        (root / ".gitignore").write_text(".xce/\nplan.json\n")  # providers' state, CI files
        self.base = self.commit("the site")

    def commit(self, message: str) -> str:
        self.repo.git.add(A=True)
        return self.repo.index.commit(message, author=ACTOR, committer=ACTOR).hexsha

    def edit(self, name: str, old: str, new: str) -> None:
        path = self.root / "site" / name
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new, 1))

    def pull_request(self, branch: str, quotas: str, file: str = "storage.yaml") -> str:
        """A branch off main with one change (by default to the quotas); returns its head
        commit."""
        self.repo.git.checkout("-b", branch, "main")
        self.edit(file, QUOTAS if file == "storage.yaml" else HOSTS, quotas)
        return self.commit(f"{file}: {quotas}")

    def merge(self, branch: str) -> str:
        self.repo.git.checkout("main")
        self.repo.git.merge("--no-ff", branch, "-m", f"Merge {branch}",
                            env=identity(ACTOR))
        return self.repo.head.commit.hexsha

    def _run(self, main: Callable[[list[str]], int], *args: str) -> Run:
        self.capsys.readouterr()
        code = main(list(args))
        out, err = self.capsys.readouterr()
        return Run(code, out, err)

    def plan(self, *args: str) -> Run:
        return self._run(plan_cli.main, "site", *self.state, *args)

    def apply(self, *args: str) -> Run:
        return self._run(apply_cli.main, "--reviewed", "site", *self.state, *args)

    def bootstrap(self) -> None:
        """main's config is live (applied the way an admin would the first time)."""
        done = self._run(apply_cli.main, "site", "--auto-approve", *self.state)
        assert done.code == 0, done.err


@pytest.fixture
def site(tmp_path: Path, target: Target, capsys: pytest.CaptureFixture[str],  # noqa: F811
         monkeypatch: pytest.MonkeyPatch) -> SiteRepo:
    (tmp_path / "repo").mkdir()
    monkeypatch.chdir(tmp_path / "repo")
    monkeypatch.delenv("XCE_STATE_URL", raising=False)
    repo = SiteRepo(tmp_path / "repo", target.url, capsys)
    repo.bootstrap()
    return repo


def _actions(doc: str) -> list[str]:
    return [a["id"] for a in json.loads(doc)["actions"]]


def test_the_plan_reviewed_on_the_pull_request_is_the_plan_applied(
        site: SiteRepo, target: Target) -> None:  # noqa: F811
    head = site.pull_request("more-quota", "{alice: 2TiB, bob: 3TiB}")
    planned = site.plan("--record", "--out", "plan.json")
    assert planned.code == 2
    digest = parse_plan((site.root / "plan.json").read_bytes(), "plan.json").desired_digest
    assert (f"Recorded the plan for review: desired {digest[7:19]} at commit {head[:12]}\n"
            in planned.err)
    with target.open() as store:
        found = store.pending_plan("small", digest)
    assert found is not None
    recorded, raw = found
    assert raw == (site.root / "plan.json").read_bytes()  # the bytes --out writes
    assert recorded.commit == head and recorded.status is ReviewStatus.PENDING
    recorded_plan = parse_plan(raw, "recorded").plan
    reviewed = [a.id for a in recorded_plan.actions]
    assert len(reviewed) == 2

    merged = site.merge("more-quota")
    assert merged != head
    applied = site.apply("--format", "json")
    assert applied.code == 0, applied.err
    assert f"Applying the plan reviewed at commit {head[:12]}" in applied.err
    assert _actions(applied.out) == reviewed
    assert json.loads(applied.out)["plan_digest"] == plan_digest(recorded_plan)
    assert target.raw("SELECT status, applied_commit, git_commit FROM reviewed_plans") == [
        ("applied", merged, head)]
    assert site.plan().code == 0  # nothing left to do


def test_a_plan_already_applied_is_not_applied_twice(site: SiteRepo) -> None:
    site.pull_request("more-quota", "{alice: 2TiB, bob: 3TiB}")
    assert site.plan("--record").code == 2
    merged = site.merge("more-quota")
    assert site.apply().code == 0
    again = site.apply("--format", "json")
    assert again.code == 0, again.err
    assert f"nothing to apply: the config at commit {merged[:12]} is live" in again.err
    assert "Applying the plan reviewed" not in again.err
    assert _actions(again.out) == []


def test_a_change_merged_after_the_review_is_refused(site: SiteRepo, target: Target) -> None:  # noqa: F811
    reviewed = site.pull_request("alice", "{alice: 2TiB, bob: 2TiB}")
    assert site.plan("--record").code == 2
    site.pull_request("hosts", "cn[01-05]", file="hosts.yaml")
    site.merge("hosts")  # merged first, never planned for review
    merged = site.merge("alice")  # the reviewed change, on top of the other one

    refused = site.apply("--format", "json")
    assert refused.code == EXIT_UNREVIEWED == 4
    (problem,) = json.loads(refused.out)["problems"]
    assert problem["code"] == "XCE770"
    message = problem["message"]
    assert f"the config being applied, commit {merged[:12]}" in message
    assert "another change was merged after that review, or nobody planned this config" \
        in message
    assert f"pending review are: commit {reviewed[:12]} (desired " in message
    assert "xce-plan site --record, then apply again" in problem["hint"]
    assert "error[XCE770]" in refused.err
    assert target.raw("SELECT status FROM reviewed_plans") == [("pending",)]
    assert site.plan().code == 2  # nothing was applied


def test_a_config_nobody_planned_for_review_is_refused(site: SiteRepo) -> None:
    raise_quotas(site.root / "site")
    pushed = site.commit("more quota, pushed to main directly")
    refused = site.apply()
    assert refused.code == EXIT_UNREVIEWED
    assert refused.out == ""
    assert (f"site: error[XCE770]: no reviewed plan matches the config being applied, commit "
            f"{pushed[:12]} (desired ") in refused.err
    assert "2 action(s) to apply" in refused.err
    assert "no plan of site small is pending review" in refused.err
    assert site.plan().code == 2  # nothing was applied


def test_a_site_may_allow_unreviewed_applies_and_the_report_says_so(site: SiteRepo) -> None:
    site.edit("site.yaml", "  discovery: report\n",
              "  discovery: report\n  unreviewed_apply: allow\n")
    raise_quotas(site.root / "site")
    site.commit("allow unreviewed applies; more quota")
    applied = site.apply("--format", "json")
    assert applied.code == 0, applied.err
    notices = json.loads(applied.out)["notices"]
    assert [n["code"] for n in notices] == ["XCE771"]
    said = ("applied an unreviewed plan: the site allows it "
            "(site.unreviewed_apply: allow at site/site.yaml:5)")
    assert notices[0]["message"] == said
    assert said in applied.err
    assert len(_actions(applied.out)) == 2
    assert site.plan().code == 0


def test_a_live_map_changed_since_the_review_is_stale_and_planned_again(
        site: SiteRepo) -> None:
    head = site.pull_request("more-quota", "{alice: 2TiB, bob: 3TiB}")
    assert site.plan("--record").code == 2
    _changed_out_of_band(site)
    merged = site.merge("more-quota")
    stale = site.apply("--format", "json")
    assert stale.code == EXIT_STALE, stale.err
    assert [(p["code"], p["subject"]) for p in json.loads(stale.out)["stale"]] == [
        ("XCE822", "quota/shared/user/alice"), ("XCE822", "quota/shared/user/bob")]
    again = site.plan("--record")  # what the pipeline does on exit 3: plan again, review
    assert again.code == 2 and f"at commit {merged[:12]}" in again.err
    applied = site.apply()
    assert applied.code == 0, applied.err
    assert f"reviewed at commit {merged[:12]}" in applied.err and head[:12] not in applied.err
    assert site.plan().code == 0


def test_the_same_commit_recorded_again_replaces_its_plan(site: SiteRepo,
                                                          target: Target) -> None:  # noqa: F811
    """Planned again on the same commit after the live map moved: the newer plan is applied
    (the older one would be stale: exit 3)."""
    head = site.pull_request("more-quota", "{alice: 2TiB, bob: 3TiB}")
    assert site.plan("--record").code == 2
    _changed_out_of_band(site)
    assert site.plan("--record").code == 2
    assert target.raw("SELECT git_commit, status FROM reviewed_plans") == [(head, "pending")]
    site.merge("more-quota")
    applied = site.apply()
    assert applied.code == 0, applied.err
    assert site.plan().code == 0


def test_a_blocked_plan_is_not_recorded(site: SiteRepo, target: Target) -> None:  # noqa: F811
    site.edit("site.yaml", "  discovery: report\n",
              "  discovery: report\n  safety: {max_changes: 1}\n")
    raise_quotas(site.root / "site")
    site.commit("more quota, at most one change")
    blocked = site.plan("--record")
    assert blocked.code == 1
    assert "XCE750" in blocked.out and "warning[XCE772]" in blocked.err
    assert "Recorded the plan" not in blocked.err
    assert target.raw("SELECT count(*) FROM reviewed_plans") == [(0,)]


def _changed_out_of_band(site: SiteRepo) -> None:
    """Someone applies another quota by hand (not through a review) and reverts the file."""
    storage = site.root / "site" / "storage.yaml"
    kept = storage.read_text()
    storage.write_text(kept.replace("alice: 2TiB", "alice: 5TiB"))
    assert site._run(apply_cli.main, "site", "--auto-approve", *site.state).code == 0
    storage.write_text(kept)


def test_without_a_store_the_record_creates_the_default_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("XCE_STATE_URL", raising=False)
    site = SiteRepo(tmp_path, None, capsys)
    assert not (tmp_path / "site" / ".xce" / "state.sqlite").exists()
    planned = site.plan("--record")
    assert planned.code == 2 and f"at commit {site.base[:12]}" in planned.err
    assert (tmp_path / "site" / ".xce" / "state.sqlite").is_file()
    assert site.apply().code == 0
    assert site.plan().code == 0


def test_the_store_keeps_one_plan_per_key_and_finds_the_newest(target: Target) -> None:  # noqa: F811
    with target.open() as store:
        store.record_plan("east", "sha256:d1", "c1", b"first")
        store.record_plan("east", "sha256:d1", "c2", b"second")
        store.record_plan("east", "sha256:d2", "c3", b"other config")
        store.record_plan("west", "sha256:d1", "c1", b"another site")
        found = store.pending_plan("east", "sha256:d1")
        assert found is not None and (found[0].commit, found[1]) == ("c2", b"second")
        store.record_plan("east", "sha256:d1", "c1", b"first, again")  # replaces, newest
        found = store.pending_plan("east", "sha256:d1")
        assert found is not None and (found[0].commit, found[1]) == ("c1", b"first, again")
        assert [r.commit for r in store.pending_plans("east")] == ["c1", "c3", "c2"]
        done = store.mark_plan_applied("east", "sha256:d1", "c1", "m1")
        assert (done.status, done.applied_commit) == (ReviewStatus.APPLIED, "m1")
        assert done.applied_at is not None
        assert store.pending_plan("east", "sha256:d1") is None  # c2 is superseded
        assert [r.commit for r in store.pending_plans("east")] == ["c3"]
        assert store.pending_plan("west", "sha256:d1") is not None
        with pytest.raises(LookupError):
            store.mark_plan_applied("east", "sha256:d9", "c1", "m1")
    statuses = target.raw("SELECT git_commit, status FROM reviewed_plans WHERE site = 'east' "
                          "ORDER BY git_commit")
    assert statuses == [("c1", "applied"), ("c2", "superseded"), ("c3", "pending")]


def test_reviewed_takes_a_site_folder_only(site: SiteRepo) -> None:
    assert site.plan("--out", "plan.json").code == 0  # the site is live
    wrong = site._run(apply_cli.main, "--reviewed", "plan.json")
    assert wrong.code == 1 and "--reviewed applies a site folder" in wrong.err
    also = site._run(apply_cli.main, "--reviewed", "site", "--auto-approve")
    assert also.code == 1 and "--reviewed takes no --auto-approve" in also.err
