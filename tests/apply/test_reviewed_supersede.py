"""Issue 21, "Pipelines": a newer plan recorded for the same branch (a second push to a pull
request) supersedes the older one, which is then neither applied nor listed by XCE770; the
stale plan of ``--reviewed`` says the reviewed flow's way out (record again), not ``xce-plan
--out``. Real git (tests/apply/test_reviewed.py's SiteRepo), real SQLite and PostgreSQL."""

from __future__ import annotations

import json

import pytest

from compiler.cli.runner import EXIT_STALE, EXIT_UNREVIEWED
from reconciler.state.store import ReviewStatus
from tests.apply.test_reviewed import SiteRepo, _changed_out_of_band, site  # noqa: F401
from tests.state.conftest import pg_admin, pg_target, sqlite_target, target  # noqa: F401
from tests.state.targets import Target


def test_a_newer_plan_of_a_branch_supersedes_the_older(target: Target) -> None:  # noqa: F811
    with target.open() as store:
        first = store.record_plan("east", "sha256:d1", "c1", b"push 1", "more-quota")
        assert first.superseded == 0
        store.record_plan("east", "sha256:d9", "c9", b"another pull request", "hosts")
        store.record_plan("east", "sha256:d8", "c8", b"no branch known")
        store.record_plan("west", "sha256:d1", "c1", b"another site", "more-quota")
        second = store.record_plan("east", "sha256:d2", "c2", b"push 2", "more-quota")
        assert (second.branch, second.superseded) == ("more-quota", 1)
        assert store.pending_plan("east", "sha256:d1") is None  # never applied now
        assert [(r.commit, r.branch) for r in store.pending_plans("east")] == [
            ("c2", "more-quota"), ("c8", ""), ("c9", "hosts")]
        assert store.record_plan("east", "sha256:d7", "c7", b"no branch").superseded == 0
        again = store.record_plan("east", "sha256:d1", "c1", b"push 1 again", "more-quota")
        assert again.superseded == 1  # c2 now
        found = store.pending_plan("east", "sha256:d1")
        assert found is not None and found[1] == b"push 1 again"
        assert store.pending_plan("west", "sha256:d1") is not None
    statuses = target.raw("SELECT git_commit, status FROM reviewed_plans WHERE site = 'east' "
                          "ORDER BY git_commit")
    assert statuses == [("c1", ReviewStatus.PENDING), ("c2", ReviewStatus.SUPERSEDED),
                        ("c7", "pending"), ("c8", "pending"), ("c9", "pending")]


def test_a_second_push_leaves_one_plan_to_review(site: SiteRepo) -> None:  # noqa: F811
    first = site.pull_request("more-quota", "{alice: 2TiB, bob: 3TiB}")
    assert site.plan("--record").code == 2
    site.edit("storage.yaml", "{alice: 2TiB, bob: 3TiB}", "{alice: 3TiB, bob: 3TiB}")
    second = site.commit("storage.yaml: more for alice")
    planned = site.plan("--record")  # the branch checked out: more-quota
    assert planned.code == 2
    assert ("It supersedes 1 older pending plan(s) of branch more-quota: they are no longer "
            "applied nor listed\n") in planned.err
    site.repo.git.checkout("main")
    site.pull_request("hosts", "cn[01-05]", file="hosts.yaml")
    merged = site.merge("hosts")  # merged without review
    refused = site.apply("--format", "json")
    assert refused.code == EXIT_UNREVIEWED
    (problem,) = json.loads(refused.out)["problems"]
    assert f"commit {merged[:12]}" in problem["message"]
    listed = problem["message"].split("pending review are: ")[1]
    assert f"commit {second[:12]} (desired " in listed and ", branch more-quota, " in listed
    assert first[:12] not in listed and "older ones" not in listed
    assert "bootstrap job by hand" in problem["hint"]


def test_branch_is_given_explicitly_with_record_only(
        site: SiteRepo, target: Target) -> None:  # noqa: F811
    site.pull_request("more-quota", "{alice: 2TiB, bob: 3TiB}")
    site.repo.git.checkout("--detach")  # a CI checkout: no branch to read
    assert site.plan("--record", "--branch", "pull/7").code == 2
    assert target.raw("SELECT branch FROM reviewed_plans") == [("pull/7",)]
    wrong = site.plan("--branch", "pull/7")
    assert wrong.code == 1 and "--branch names the branch a recorded plan is for" in wrong.err


def test_a_stale_reviewed_plan_says_to_record_again(site: SiteRepo) -> None:  # noqa: F811
    site.pull_request("more-quota", "{alice: 2TiB, bob: 3TiB}")
    assert site.plan("--record").code == 2
    _changed_out_of_band(site)
    site.merge("more-quota")
    stale = site.apply("--format", "json")
    assert stale.code == EXIT_STALE, stale.err
    hints = {p["hint"] for p in json.loads(stale.out)["stale"]}
    assert hints == {"live supply changed since the review: record the plan again (xce-plan "
                     "site --record; the pipeline's apply job does it and comments it on the "
                     "pull request), review it, then xce-apply --reviewed site again"}
    text = site.apply()
    assert text.code == EXIT_STALE and "xce-plan --out" not in text.out + text.err


@pytest.mark.parametrize("branch", ["", "main"])
def test_a_plan_of_no_branch_or_another_supersedes_nothing_it_should_not(
        target: Target, branch: str) -> None:  # noqa: F811
    with target.open() as store:
        store.record_plan("east", "sha256:d1", "c1", b"a pull request", "feature")
        store.record_plan("east", "sha256:d2", "c2", b"main, after a stale apply", branch)
        assert [r.commit for r in store.pending_plans("east")] == ["c2", "c1"]
