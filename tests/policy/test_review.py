"""``xce-policy review`` between real git revisions: gains, losses, escalations, exit codes."""

from __future__ import annotations

import shutil
from pathlib import Path

import git
import pytest
from syrupy.assertion import SnapshotAssertion

from compiler.cmds.policy import main
from compiler.policy.gitsource import compile_at
from compiler.policy.review import diff
from compiler.policy.review_render import render_json, render_markdown, render_text
from tests.policy.gitrepo import PolicyRepo
from tests.policy.helpers import POLICIES, TODAY


@pytest.fixture
def repo(tmp_path: Path) -> PolicyRepo:
    return PolicyRepo(tmp_path / "repo")


def _review(repo: PolicyRepo, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(
        ["review", "--repo", str(repo.path), "--base", repo.base, "--format", "json", *extra]
    )
    return code, capsys.readouterr().out


def _changes(repo: PolicyRepo) -> list[tuple[str, str, str, str, bool]]:
    """(section, subject, what, opcodes, escalates) of HEAD against the base."""
    base = compile_at(repo.repo, repo.base, "policies", "site-config", TODAY)
    head = compile_at(repo.repo, "HEAD", "policies", "site-config", TODAY)
    assert not head.problems.has_errors, head.problems.items
    review = diff(base.document, head.document, "base", "head")
    return [
        (c.section.value, c.subject, c.what, ",".join(c.items), c.escalation is not None)
        for c in review.changes
    ]


def test_no_change_exits_0(repo: PolicyRepo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.edit("policies/roles.yaml", "# Component roles", "# The component roles")
    repo.edit("policies/roles.yaml", "      - job.requeue\n", "      - job.requeue   # comment\n")
    repo.commit("comments only")
    code, out = _review(repo, capsys)
    assert code == 0
    assert '"status": "none"' in out and '"changes": []' in out


def test_a_plain_gain_and_loss_exit_2(repo: PolicyRepo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.edit(
        "policies/roles.yaml", "      - job.requeue\n", "      - job.requeue\n      - job.kill\n"
    )
    repo.edit(
        "policies/roles.yaml",
        "      - host.query\n      - host.resync\n      - supply.report\n",
        "      - host.query\n      - supply.report\n",
    )
    repo.commit("scheduler may kill; node-manager no longer resyncs")
    assert _changes(repo) == [
        ("role", "node-manager", "lost", "host.resync", False),
        ("role", "scheduler", "gained", "job.kill", False),
    ]
    assert _review(repo, capsys)[0] == 2


def test_removing_a_deny_escalates_even_without_a_gain(repo: PolicyRepo) -> None:
    repo.edit(
        "policies/roles.yaml",
        "      - risk:spend\n      - risk:admin\n\n  - name: worker",
        "      - risk:admin\n\n  - name: worker",
    )
    repo.commit("apiserver: drop a deny")
    assert _changes(repo) == [
        ("role", "apiserver", "deny-removed", "provision.create", True),
        ("role", "apiserver", "deny-removed", "supply.borrow", True),
    ]


def test_gaining_spend_escalates_for_role_and_proxies(repo: PolicyRepo) -> None:
    repo.edit(
        "policies/roles.yaml",
        "      - category:provision\n      - category:supply\n",
        "      - category:supply\n",
    )
    base = repo.commit("proxy without provisioning")
    repo.edit(
        "policies/roles.yaml",
        "      - category:supply\n",
        "      - category:provision\n      - category:supply\n",
    )
    repo.commit("proxy provisions again")
    repo.base = base
    provisioning = "provision.create,provision.return,provision.stop"
    assert _changes(repo) == [
        ("role", "proxy", "gained", "provision.create", True),
        ("role", "proxy", "gained", "provision.return", False),
        ("role", "proxy", "gained", "provision.stop", False),
        ("proxy", "proxy-a", "gained", provisioning, True),
        ("proxy", "proxy-b", "gained", provisioning, True),
        # proxy-idle serves no provider: it gains nothing scoped
    ]


def test_a_proxy_serving_one_more_provider_escalates(repo: PolicyRepo) -> None:
    repo.edit(
        "site-config/proxies.yaml",
        "standby: [shared-fs, cloud-burst]",
        "standby: [shared-fs, cloud-burst, gpu-cache]",
    )
    repo.commit("proxy-b also stands by for gpu-cache")
    base = compile_at(repo.repo, repo.base, "policies", "site-config", TODAY)
    head = compile_at(repo.repo, "HEAD", "policies", "site-config", TODAY)
    [change] = diff(base.document, head.document, "base", "head").changes
    assert (change.subject, change.what, change.providers) == ("proxy-b", "gained", ("gpu-cache",))
    assert change.items == (
        "lease.acquire",
        "lease.release",
        "lease.renew",
        "provision.create",
        "provision.return",
        "provision.stop",
        "supply.borrow",
        "supply.inventory-publish",
        "supply.query",
        "supply.report",
        "supply.update",
    )
    assert change.escalation == "gains provision.create (301, spend), supply.borrow (405, spend)"


def test_new_role_and_new_waiver_escalate(
    repo: PolicyRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write(
        "site-config/extra.yaml",
        """version: 1
policy:
  roles:
    - name: backup-agent
      allow: [supply.query]
  allow:
    - role: scheduler
      opcodes: [peer.admin]
  waivers:
    - name: scheduler-peer
      guardrail: admin-only-admin-cli
      role: scheduler
      opcodes: [peer.admin]
      reason: "test"
      expires: 2099-01-01
""",
    )
    repo.commit("a role, an admin grant and a waiver")
    code, _ = _review(repo, capsys)
    assert code == 1  # 2099 is beyond the waiver horizon: the head does not compile
    repo.edit(
        "site-config/extra.yaml",
        "2099-01-01",
        (repo.path / "site-config" / "policy-waivers.yaml")
        .read_text()
        .split("expires: ")[1]
        .strip(),
    )
    repo.commit("a waiver within the horizon")
    assert _changes(repo) == [
        ("role", "backup-agent", "added", "", True),
        ("role", "backup-agent", "gained", "supply.query", False),
        ("role", "scheduler", "gained", "peer.admin", True),
        ("waiver", "scheduler-peer", "added", "", True),
    ]
    assert _review(repo, capsys)[0] == 3


def test_renumbering_an_opcode_escalates(repo: PolicyRepo) -> None:
    repo.edit("policies/opcodes.yaml", "name: job.query, id: 105", "name: job.query, id: 106")
    repo.commit("renumber")
    assert _changes(repo) == [("opcode", "job.query", "renumbered", "", True)]


def test_reusing_a_removed_id_escalates(repo: PolicyRepo) -> None:
    repo.edit(
        "policies/opcodes.yaml", "name: claim.snapshot, id: 604", "name: claim.checkpoint, id: 604"
    )
    repo.commit("reuse id 604")
    assert _changes(repo) == [
        ("opcode", "claim.checkpoint", "added", "", True),
        ("opcode", "claim.snapshot", "removed", "", False),
    ]


def test_a_broken_head_is_an_error_with_file_and_line(
    repo: PolicyRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.edit(
        "policies/roles.yaml",
        "      - host.resync\n      - supply.report\n    deny:",
        "      - host.resync\n      - supply.report\n      - supply.update\n    deny:",
    )
    repo.edit(
        "policies/roles.yaml",
        "      - supply.update\n\n  - name: scheduler",
        "\n  - name: scheduler",
    )
    repo.commit("worker may update supply")
    capsys.readouterr()
    code = main(["review", "--repo", str(repo.path), "--base", repo.base])
    err = capsys.readouterr().err
    assert code == 1
    lines = (repo.path / "policies" / "roles.yaml").read_text().splitlines()
    line = lines.index("      - supply.update", lines.index("  - name: worker")) + 1
    assert f"policies/roles.yaml:{line}:9: error[XCE630]" in err and "'worker'" in err


def test_policies_introduced_after_the_base(tmp_path: Path) -> None:
    repo = PolicyRepo(tmp_path / "repo", with_policies=False)
    shutil.copytree(POLICIES, repo.path / "policies")
    repo.commit("add policies")
    changes = _changes(repo)
    assert ("role", "proxy", "added", "", True) in changes
    assert ("role", "admin-cli", "gained", "peer.admin", True) in changes


def test_unknown_revision_and_not_a_repo(
    repo: PolicyRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["review", "--repo", str(repo.path), "--base", "no-such-branch"]) == 1
    assert "XCE661" in capsys.readouterr().err
    (tmp_path / "plain").mkdir()
    assert main(["review", "--repo", str(tmp_path / "plain"), "--base", "HEAD"]) == 1
    assert "XCE660" in capsys.readouterr().err


def test_review_in_a_shallow_clone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """CI clones the pull request's branch with depth 1 and fetches only the base."""
    origin = PolicyRepo(tmp_path / "origin")
    origin.repo.create_head("feature").checkout()
    origin.edit(
        "policies/roles.yaml", "      - job.requeue\n", "      - job.requeue\n      - job.kill\n"
    )
    origin.commit("scheduler may kill")
    clone = git.Repo.clone_from(f"file://{origin.path}", tmp_path / "ci", depth=1, branch="feature")
    assert (Path(clone.git_dir) / "shallow").exists()
    argv = ["review", "--repo", str(tmp_path / "ci"), "--base", "origin/main"]
    assert main(argv) == 1
    assert "shallow clone" in capsys.readouterr().err
    clone.git.fetch("origin", "main:refs/remotes/origin/main", depth=1)
    assert main(argv) == 2
    assert "+ job.kill (102, write)" in capsys.readouterr().out
    assert not (tmp_path / "ci" / "build").exists()  # nothing written, nothing checked out


def test_review_renderings_are_reviewed(repo: PolicyRepo, snapshot: SnapshotAssertion) -> None:
    repo.edit(
        "policies/roles.yaml", "      - job.requeue\n", "      - job.requeue\n      - job.kill\n"
    )
    repo.edit(
        "policies/roles.yaml",
        "      - risk:spend\n      - risk:admin\n\n  - name: worker",
        "      - risk:admin\n\n  - name: worker",
    )
    repo.edit(
        "site-config/proxies.yaml", "standby: [shared-fs, cloud-burst]", "standby: [shared-fs]"
    )
    repo.edit(
        "site-config/policy-roles.yaml", '"supply.report"]', '"supply.report", "supply.query"]'
    )
    repo.commit("a mixed change")
    base = compile_at(repo.repo, repo.base, "policies", "site-config", TODAY)
    head = compile_at(repo.repo, "HEAD", "policies", "site-config", TODAY)
    review = diff(base.document, head.document, "base", "head")
    assert review.exit_code == 3
    assert render_text(review) == snapshot(name="text")
    assert render_markdown(review) == snapshot(name="markdown")
    assert render_json(review) == snapshot(name="json")


def test_folders_may_be_given_absolute_inside_the_repository(
    repo: PolicyRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.edit(
        "policies/roles.yaml", "      - job.requeue\n", "      - job.requeue\n      - job.kill\n"
    )
    repo.commit("scheduler may kill")
    argv = ["review", "--repo", str(repo.path), "--base", repo.base]
    assert main([*argv, "--policies", str(repo.path / "policies")]) == 2
    assert main([*argv, "--site", str(tmp_path)]) == 1
    assert "XCE662" in capsys.readouterr().err


def test_marking_an_opcode_unused_is_no_removed_deny(repo: PolicyRepo) -> None:
    """Denies of an opcode no role may hold deny nothing: losing them widens nothing."""
    repo.edit(
        "policies/opcodes.yaml",
        "name: supply.borrow, id: 405, category: supply, risk: spend,",
        "name: supply.borrow, id: 405, category: supply, risk: spend, unused: true,",
    )
    repo.commit("no borrowing yet")
    assert _changes(repo) == [
        ("role", "proxy", "lost", "supply.borrow", False),
        ("proxy", "proxy-a", "lost", "supply.borrow", False),
        ("proxy", "proxy-b", "lost", "supply.borrow", False),
    ]


def test_changes_of_a_whole_subject_say_what_happened(
    repo: PolicyRepo, snapshot: SnapshotAssertion
) -> None:
    """Added and removed read differently, for opcodes, roles, proxies and waivers alike."""
    repo.edit(
        "policies/opcodes.yaml", "name: claim.snapshot, id: 604", "name: claim.checkpoint, id: 605"
    )
    repo.edit("policies/opcodes.yaml", "name: job.query, id: 105", "name: job.query, id: 106")
    repo.write("site-config/policy-waivers.yaml", "version: 1\n")
    repo.edit("site-config/proxies.yaml", "  - name: proxy-idle\n    host: adm03\n", "")
    repo.edit("site-config/policy-roles.yaml", "name: site-monitor", "name: site-monitoring")
    repo.commit("rename, renumber, remove")
    base = compile_at(repo.repo, repo.base, "policies", "site-config", TODAY)
    head = compile_at(repo.repo, "HEAD", "policies", "site-config", TODAY)
    review = diff(base.document, head.document, "base", "head")
    text = render_text(review)
    assert "opcode claim.checkpoint: added (605, write)\n" in text
    assert "opcode claim.snapshot: removed (604, write)\n" in text
    assert "opcode job.query: renumbered: id 105 -> 106  [escalation:" in text
    assert "waiver proxy-admin-reload: removed: proxy may break" in text
    assert "role site-monitor: role removed\n" in text
    assert "role site-monitoring: new role  [escalation: new role]\n" in text
    assert "proxy proxy-idle: proxy instance removed\n" in text
    expires = base.document["waivers"][0]["expires"]  # PolicyRepo dates it from today
    assert text.replace(expires, "EXPIRES") == snapshot(name="text")
    assert render_markdown(review).replace(expires, "EXPIRES") == snapshot(name="markdown")
