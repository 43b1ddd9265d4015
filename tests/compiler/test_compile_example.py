"""The example site compiles clean, deterministically, and its outputs are reviewed snapshots."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import git
import pytest
from syrupy.assertion import SnapshotAssertion

import compiler.compile as compile_mod
from compiler.cmds.compile import main


def _compile(site: Path, out: Path) -> dict[str, bytes]:
    assert main([str(site), "--out", str(out)]) == 0
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def test_example_compiles_to_reviewed_map(
    example_site: Path, tmp_path: Path, snapshot_json: SnapshotAssertion
) -> None:
    outputs = _compile(example_site, tmp_path / "build")
    supply = json.loads(outputs["supply-map.json"])
    supply.pop("revision"), supply.pop("dirty")
    assert supply == snapshot_json(name="supply-map")
    assert json.loads(outputs["bindings.json"]) == snapshot_json(name="bindings")
    # Every policy change shows up here as a reviewed diff (docs/policies.md).
    assert json.loads(outputs["allowlists.json"]) == snapshot_json(name="allowlists")


def test_example_entry_counts(example_site: Path, tmp_path: Path) -> None:
    supply = json.loads(_compile(example_site, tmp_path / "b")["supply-map.json"])
    ids = [e["id"] for e in supply["entries"]]
    assert ids == sorted(ids) and len(ids) == len(set(ids))
    kinds: dict[str, int] = {}
    for e in supply["entries"]:
        kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1
    assert kinds["host"] == 512 + 448 + 48 + 32 + 4 + 8  # burst: count 8 of 128 names
    assert kinds["instance"] == 8
    assert kinds["volume-dir"] == 20
    by_id = {e["id"]: e for e in supply["entries"]}
    assert by_id["counter/mem@host/cn0001"]["amount"] == 2**40  # override
    assert by_id["counter/mem@host/cn0005"]["amount"] == 256 * 2**30  # site default
    assert by_id["host/gn001"]["attributes"]["mounts"] == ["shared"]
    assert by_id["quota/shared/project/climate"]["amount"] == 120 * 2**40
    assert by_id["host/burst001"]["source"] == "provisioned"
    assert "host/burst009" not in by_id


def test_output_is_byte_identical_whatever_the_file_order(
    example_site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _compile(example_site, tmp_path / "a")
    original = compile_mod.find_yaml_files
    monkeypatch.setattr(compile_mod, "find_yaml_files",
                        lambda root, problems: original(root, problems)[::-1])
    second = _compile(example_site, tmp_path / "b")
    assert first == second


def test_moved_files_give_the_same_map(example_site: Path, tmp_path: Path) -> None:
    """Sections may be split across files and folders: layout does not change the output."""
    flat = tmp_path / "flat"
    flat.mkdir()
    for i, f in enumerate(sorted(example_site.rglob("*.yaml"))):
        shutil.copy(f, flat / f"z{99 - i:02d}-{f.name}")
    a = json.loads(_compile(example_site, tmp_path / "a")["supply-map.json"])
    b = json.loads(_compile(flat, tmp_path / "b")["supply-map.json"])
    assert a["digest"] == b["digest"] and a["entries"] == b["entries"]


def test_manifest_records_git_revision_and_dirty_flag(example_site: Path, tmp_path: Path) -> None:
    repo_dir = tmp_path / "repo"
    shutil.copytree(example_site, repo_dir / "site-config")
    repo = git.Repo.init(repo_dir)
    repo.index.add([str(p) for p in (repo_dir / "site-config").rglob("*") if p.is_file()])
    commit = repo.index.commit("site")
    outputs = _compile(repo_dir / "site-config", tmp_path / "b1")
    manifest = json.loads(outputs["manifest.json"])
    assert manifest["revision"] == commit.hexsha and manifest["dirty"] is False
    for name, digest in manifest["outputs"].items():
        import hashlib

        assert digest == "sha256:" + hashlib.sha256(outputs[name]).hexdigest()
    (repo_dir / "site-config" / "pools.yaml").write_text(
        (repo_dir / "site-config" / "pools.yaml").read_text() + "\n# edited\n"
    )
    manifest2 = json.loads(_compile(repo_dir / "site-config", tmp_path / "b2")["manifest.json"])
    assert manifest2["dirty"] is True
    assert manifest2["desired_digest"] == manifest["desired_digest"]  # a comment changes nothing


def test_invalid_site_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "a.yaml").write_text(
        "version: 1\nsite: {name: s}\nhost_groups:\n  - name: g\n    hosts: cn[5-2]\n"
    )
    out = tmp_path / "build"
    assert main([str(site), "--out", str(out)]) == 1
    assert not out.exists()
    err = capsys.readouterr().err
    assert "a.yaml:5:12: error[XCE202]" in err and "Traceback" not in err


def test_usage_and_output_mistakes_are_errors_not_crashes(
    example_site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 1 with a code for each, never argparse's 2 nor an "internal error"."""
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    cases = {
        "XCE007": ["--format", "xml"],
        "XCE008": [str(example_site), "--out", str(not_a_folder)],
        "XCE006": [str(not_a_folder)],
    }
    for code, argv in cases.items():
        assert main(argv) == 1, argv
        err = capsys.readouterr().err
        assert f"error[{code}]" in err and "internal error" not in err, err
    assert "is not a folder" in err


def test_schema_is_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["additionalProperties"] is False
    assert "host_groups" in schema["properties"] and "version" in schema["required"]
