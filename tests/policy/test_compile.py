"""Compiling the real policies and a small site: reviewed snapshots, rules, scoping."""

from __future__ import annotations

from pathlib import Path

import pytest
from ruamel.yaml import YAML
from syrupy.assertion import SnapshotAssertion

from compiler.core.canonical import digest, dumps
from compiler.core.problems import Problems
from compiler.policy import compile_policies
from tests.policy.helpers import (
    FIXTURES,
    POLICIES,
    TODAY,
    compile_tree,
    copy_policies,
    opcode_names,
    write,
)

SITE = FIXTURES / "site"


def test_policies_allowlists_are_reviewed(snapshot_json: SnapshotAssertion) -> None:
    """Any change to policies/ changes this snapshot: accept it with --snapshot-update."""
    doc, problems = compile_tree(POLICIES, None)
    assert problems == []
    assert doc == snapshot_json


def test_site_allowlists_are_reviewed(snapshot_json: SnapshotAssertion) -> None:
    doc, problems = compile_tree(POLICIES, SITE)
    assert problems == []
    assert doc == snapshot_json


def test_every_catalog_opcode_is_held_or_unused() -> None:
    doc, _ = compile_tree(POLICIES, None)
    held = {o["name"] for role in doc["roles"].values() for o in role["opcodes"]}
    for op in doc["catalog"]:
        assert (op["name"] in held) != bool(op.get("unused")), op["name"]


def test_guardrails_hold_in_the_real_policies() -> None:
    doc, _ = compile_tree(POLICIES, None)
    risk = {o["name"]: o["risk"] for o in doc["catalog"]}
    for role, entry in doc["roles"].items():
        risks = {risk[o["name"]] for o in entry["opcodes"]}
        assert "spend" not in risks or role == "proxy", role
        assert "admin" not in risks or role == "admin-cli", role
    assert not {"supply.update", "provision.create"} & set(opcode_names(doc, "worker"))


def test_deny_wins_over_a_site_allow(tmp_path: Path) -> None:
    write(
        tmp_path / "site" / "p.yaml",
        """
version: 1
policy:
  allow:
    - {role: worker, opcodes: [supply.update, host.query]}
""",
    )
    doc, problems = compile_tree(POLICIES, tmp_path / "site")
    assert problems == []
    assert "host.query" in opcode_names(doc, "worker")
    assert "supply.update" not in opcode_names(doc, "worker")  # roles.yaml denies it
    assert "supply.update" in doc["roles"]["worker"]["denied"]


def test_site_deny_removes_from_a_role() -> None:
    doc, _ = compile_tree(POLICIES, SITE)
    base, _ = compile_tree(POLICIES, None)
    assert "supply.update" not in opcode_names(base, "reporter")  # already denied
    assert opcode_names(doc, "site-monitor") == ["host.query", "host.resync", "supply.report"]
    assert doc["roles"]["site-monitor"]["origin"] == "site"


def test_proxies_are_scoped_to_the_providers_they_serve() -> None:
    doc, _ = compile_tree(POLICIES, SITE)
    scoped = {"provision", "supply", "lease"}
    category = {o["name"]: o["category"] for o in doc["catalog"]}
    a, b, idle = (doc["proxies"][n] for n in ("proxy-a", "proxy-b", "proxy-idle"))
    assert a["providers"] == ["cloud-burst", "gpu-cache", "shared-fs"]
    assert b["providers"] == ["cloud-burst", "shared-fs"]  # standby counts
    create = next(o for o in b["opcodes"] if o["name"] == "provision.create")
    assert create == {
        "name": "provision.create",
        "id": 301,
        "providers": ["cloud-burst", "shared-fs"],
    }
    for op in b["opcodes"]:
        assert ("providers" in op) == (category[op["name"]] in scoped), op
    # a proxy serving nothing may call none of the provider-scoped opcodes
    assert idle["providers"] == []
    assert {category[o["name"]] for o in idle["opcodes"]}.isdisjoint(scoped)
    assert {o["name"] for o in idle["opcodes"]} == {"claim.publish", "config.reload", "host.query"}
    # every proxy instance holds exactly its role's opcodes, nothing more
    assert {o["name"] for o in a["opcodes"]} == set(opcode_names(doc, "proxy"))


def test_proxies_need_a_proxy_role(tmp_path: Path) -> None:
    pol = copy_policies(tmp_path / "policies")
    text = (pol / "roles.yaml").read_text().replace("name: proxy\n", "name: proxies\n")
    (pol / "roles.yaml").write_text(text)
    write(tmp_path / "site" / "p.yaml", "version: 1\nproxies:\n  - name: proxy-a\n")
    doc, problems = compile_tree(pol, tmp_path / "site")
    assert "XCE650" in {p.code for p in problems}
    assert doc["proxies"] == {}


def _shuffled_copy(src: Path, dest: Path) -> None:
    """Same policies, every list written in reverse order."""
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    dest.mkdir()
    for path in src.glob("*.yaml"):
        data = yaml.load(path.read_text())
        for key in ("roles", "opcodes", "guardrails"):
            if key in data:
                data[key] = list(reversed(data[key]))
                for item in data[key]:
                    for sub in ("allow", "deny"):
                        if sub in item:
                            item[sub] = list(reversed(item[sub]))
        with (dest / path.name).open("w") as fh:
            yaml.dump(data, fh)


def test_compile_is_deterministic(tmp_path: Path) -> None:
    doc, _ = compile_tree(POLICIES, SITE)
    again, _ = compile_tree(POLICIES, SITE)
    assert dumps(doc) == dumps(again)
    _shuffled_copy(POLICIES, tmp_path / "policies")
    # the site's sections merged into one file, proxies listed in reverse
    merged = (
        (SITE / "policy-roles.yaml")
        .read_text()
        .replace(
            "\n  deny:", "\n  allow:\n    - role: proxy\n      opcodes: [config.reload]\n  deny:"
        )
    )
    waivers = (SITE / "policy-waivers.yaml").read_text()
    merged += waivers[waivers.index("  waivers:") :]
    proxies = (SITE / "proxies.yaml").read_text().split("  - name: ")
    write(tmp_path / "site" / "all.yaml", merged)
    write(
        tmp_path / "site" / "z.yaml",
        proxies[0] + "".join("  - name: " + p for p in reversed(proxies[1:])),
    )
    shuffled, problems = compile_tree(tmp_path / "policies", tmp_path / "site")
    assert problems == []
    assert dumps(shuffled) == dumps(doc)


def test_build_digest_is_the_digest_of_the_file_bytes() -> None:
    build = compile_policies(POLICIES, [], Problems(), TODAY)
    assert build.to_bytes() == dumps(build.document)
    assert build.digest == digest(build.to_bytes())
    assert {s.path.rsplit("/", 1)[-1] for s in build.sources} == {
        "opcodes.yaml",
        "roles.yaml",
        "guardrails.yaml",
    }


def test_missing_policy_files_are_reported(tmp_path: Path) -> None:
    pol = tmp_path / "policies"
    pol.mkdir()
    write(pol / "opcodes.yaml", (POLICIES / "opcodes.yaml").read_text())
    _, problems = compile_tree(pol, None)
    missing = sorted(p.file or "" for p in problems if p.code == "XCE600")
    assert [m.rsplit("/", 1)[-1] for m in missing] == ["guardrails.yaml", "roles.yaml"]
    assert {p.code for p in problems} == {"XCE600"}  # no cascade of unknown names


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("", "XCE601"),
        ("version: 1\nroles:\n", "XCE604"),
        ("version: 1\nroles:\n  - {name: 5, allow: [host.query]}\n", "XCE604"),
    ],
)
def test_unreadable_roles_are_reported_without_a_cascade(
    tmp_path: Path, text: str, code: str
) -> None:
    """No role read: the guardrails' role names and unheld opcodes would only echo it."""
    pol = copy_policies(tmp_path / "policies")
    (pol / "roles.yaml").write_text(text)
    _, problems = compile_tree(pol, None)
    assert [(p.code, (p.file or "").rsplit("/", 1)[-1]) for p in problems] == [(code, "roles.yaml")]


@pytest.mark.parametrize(
    ("rule", "code", "hint"),
    [
        ("- {role: worker, opcodes: [host.jion]}", "XCE620", "did you mean 'host.join'?"),
        ("- {role: wroker, opcodes: [host.join]}", "XCE623", "did you mean 'worker'?"),
        ("- {role: worker, opcodes: ['hosts.*']}", "XCE621", "did you mean 'host.*'?"),
        ("- {role: worker, opcodes: ['category:lease2']}", "XCE622", "did you mean 'lease'?"),
        (
            "- {role: worker, opcodes: ['zzz.*']}",
            "XCE621",
            "see policies/opcodes.yaml for the names",
        ),
    ],
)
def test_unknown_names_suggest_the_closest(tmp_path: Path, rule: str, code: str, hint: str) -> None:
    write(tmp_path / "site" / "p.yaml", f"version: 1\npolicy:\n  deny:\n    {rule}\n")
    _, problems = compile_tree(POLICIES, tmp_path / "site")
    [p] = problems
    assert (p.code, p.hint, p.line) == (code, hint, 4)
