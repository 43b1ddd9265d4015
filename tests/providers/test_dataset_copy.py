"""The dataset-copy provider on real files: atomic verified staging, corruption, eviction."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

import reconciler.providers.dataset_copy as dataset_copy
import reconciler.providers.dataset_digest as dataset_digest_module
from reconciler.protocol import ErrorCode, Reply
from reconciler.providers.dataset_digest import DatasetError, dataset_digest
from reconciler.providers.registry import open_provider
from reconciler.providers.root_marker import MARKER
from reconciler.transports import BuiltinTransport, Transport
from tests.helpers import call, ok
from tests.providers.kit import OWNER, inventory

LOC = "group/gpu"


class Cache:
    def __init__(self, tmp_path: Path, **params: Any) -> None:
        self.src = tmp_path / "src"
        self.src.mkdir(exist_ok=True)
        self.root = tmp_path / "cache"
        binding = {"kind": "dataset-copy", "params": {
            "location": LOC, "source_base": "src", "cache_root": "cache", **params}}
        self.t: Transport = open_provider("cache-gpu", binding, tmp_path)
        self.ops = 0

    def request(self, verb: str, **params: Any) -> Reply:
        self.ops += 1
        return call(self.t, verb, op_id=f"op{self.ops}", epoch=1, owner=OWNER, params=params)

    def stage(self, dataset: str, source: str, digest: str | None = None) -> Reply:
        spec = {"dataset": dataset, "source": source}
        if digest is not None:
            spec["digest"] = digest
        return self.request("create", action="stage",
                            entry={"id": f"dataset-copy/{dataset}@{LOC}", "spec": spec})

    def states(self) -> dict[str, str]:
        return {k: e["state"] for k, e in inventory(self.t).items()}

    def adopt(self) -> None:
        """Adopt the cache folder as it is (what ``xce-adopt cache-gpu`` does)."""
        assert isinstance(self.t, BuiltinTransport)
        assert isinstance(self.t.provider, dataset_copy.DatasetCopyProvider)
        self.t.provider.adopt(None, None, OWNER)

    def recorded_mark(self) -> dict[str, Any]:
        """The root mark the provider recorded for its cache."""
        assert isinstance(self.t, BuiltinTransport)
        text = self.t.provider.ledger.root_mark("cache/cache-gpu")  # type: ignore[attr-defined]
        return dict(json.loads(text or "{}"))

    def listing(self) -> list[str]:
        """What the cache folder holds besides its root marker (nothing before a stage)."""
        return sorted(n for n in os.listdir(self.root) if n != MARKER) if self.root.exists() else []


def make_tree(root: Path) -> Path:
    (root / "train" / "shard").mkdir(parents=True)
    (root / "train" / "labels.csv").write_text("a,1\nb,2\n")
    (root / "train" / "shard" / "000.bin").write_bytes(os.urandom(3000))
    (root / "train" / "shard" / "001.bin").write_bytes(b"\x00" * 5000)
    (root / "README").write_text("imagenet, small\n")
    return root


@pytest.fixture
def cache(tmp_path: Path) -> Cache:
    c = Cache(tmp_path)
    make_tree(c.src / "imagenet")
    return c


def test_digest_definition(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "t")
    lines = b""
    for rel in sorted(["README", "train/labels.csv", "train/shard/000.bin", "train/shard/001.bin"]):
        hexd = hashlib.sha256((tree / rel).read_bytes()).hexdigest()
        lines += rel.encode() + b"\0" + hexd.encode() + b"\n"
    assert dataset_digest(tree) == "sha256:" + hashlib.sha256(lines).hexdigest()
    single = tree / "README"
    assert dataset_digest(single) == "sha256:" + hashlib.sha256(single.read_bytes()).hexdigest()
    (tree / "empty-dir").mkdir()
    assert dataset_digest(tree) == "sha256:" + hashlib.sha256(lines).hexdigest()
    (tree / "link").symlink_to(tree / "README")
    with pytest.raises(DatasetError, match="link is a symbolic link"):
        dataset_digest(tree)


def test_stage_copies_a_tree_verified_and_read_only(cache: Cache) -> None:
    digest = dataset_digest(cache.src / "imagenet")
    reply = cache.stage("imagenet@3", "imagenet", digest)
    assert reply.ok, reply.to_json()
    entry = reply.result["entry"]
    assert entry["id"] == "dataset-copy/imagenet@3@group/gpu" and entry["state"] == "available"
    assert entry["amount"] == 3000 + 5000 + len("a,1\nb,2\n") + len("imagenet, small\n")
    assert entry["spec"] == {"dataset": "imagenet@3", "digest": digest, "source": "imagenet"}
    copy = cache.root / "imagenet@3"
    assert dataset_digest(copy) == digest
    assert stat.S_IMODE((copy / "README").stat().st_mode) == 0o444
    assert cache.listing() == ["imagenet@3"]  # no staging or trash left
    assert inventory(cache.t)[entry["id"]] == entry


def test_stage_a_single_file_dataset(cache: Cache) -> None:
    (cache.src / "weights.pt").write_bytes(os.urandom(1234))
    digest = dataset_digest(cache.src / "weights.pt")
    assert cache.stage("weights@1", "weights.pt", digest).ok
    assert (cache.root / "weights@1" / "weights.pt").read_bytes() == (
        cache.src / "weights.pt").read_bytes()
    assert cache.states() == {"dataset-copy/weights@1@group/gpu": "available"}


def test_digest_mismatch_leaves_nothing_behind(cache: Cache) -> None:
    reply = cache.stage("imagenet@3", "imagenet", "sha256:" + "0" * 64)
    assert reply.error is not None and reply.error.code is ErrorCode.FAILED_PRECONDITION
    assert "digest mismatch" in reply.error.message
    assert cache.listing() == []
    assert cache.states() == {}


def test_corruption_is_detected_even_when_size_and_mtime_are_restored(cache: Cache) -> None:
    assert cache.stage("imagenet@3", "imagenet", dataset_digest(cache.src / "imagenet")).ok
    assert cache.states() == {"dataset-copy/imagenet@3@group/gpu": "available"}
    victim = cache.root / "imagenet@3" / "train" / "shard" / "001.bin"
    st = victim.stat()
    os.chmod(victim, 0o644)
    victim.write_bytes(b"\x00" * 4999 + b"\x01")  # same size
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime
    entry = inventory(cache.t)["dataset-copy/imagenet@3@group/gpu"]
    assert entry["state"] == "corrupt"
    assert entry["spec"]["found_digest"] != entry["spec"]["digest"]


def test_inventory_rehashes_only_changed_files(cache: Cache, monkeypatch: pytest.MonkeyPatch
                                               ) -> None:
    assert cache.stage("imagenet@3", "imagenet", dataset_digest(cache.src / "imagenet")).ok
    hashed: list[str] = []
    real = dataset_digest_module.file_hex

    def spy(dir_fd: int | None, name: str | Path, shown: str | None = None) -> str:
        hashed.append(str(name))
        return real(dir_fd, name, shown)

    monkeypatch.setattr(dataset_copy, "file_hex", spy)
    inventory(cache.t)
    assert hashed == []  # staging filled the cache: nothing is read again
    (cache.root / "imagenet@3" / "README").chmod(0o644)  # ctime changes: rehash this one
    inventory(cache.t)
    assert hashed == ["README"]
    ok(cache.t, "inventory", params={"verify": True})
    assert len(hashed) == 5  # a scrub reads every file


def test_symlinks_in_sources_and_copies(cache: Cache, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("do not copy")
    (cache.src / "imagenet" / "leak").symlink_to(secret)
    reply = cache.stage("imagenet@3", "imagenet")
    assert reply.error is not None and reply.error.code is ErrorCode.FAILED_PRECONDITION
    assert "symbolic link" in reply.error.message and cache.listing() == []
    (cache.src / "imagenet" / "leak").unlink()
    assert cache.stage("imagenet@3", "imagenet").ok
    (cache.root / "imagenet@3" / "planted").symlink_to(secret)
    (cache.root / "other@1").symlink_to(tmp_path)  # a link where a copy folder should be
    assert cache.states() == {"dataset-copy/imagenet@3@group/gpu": "corrupt",
                              "dataset-copy/other@1@group/gpu": "corrupt"}
    assert cache.request("delete", action="evict", id="dataset-copy/other@1@group/gpu").ok
    assert secret.read_text() == "do not copy" and tmp_path.is_dir()
    assert not (cache.root / "other@1").is_symlink()


def test_unfinished_stage_and_evict_are_reported_and_swept(cache: Cache) -> None:
    cache.root.mkdir()
    cache.adopt()  # the folder of a cache this provider's state knows nothing of
    (cache.root / ".staging-imagenet@3-abc123" / "train").mkdir(parents=True)
    (cache.root / ".trash-era5@2024-0a1b2c" / "x").mkdir(parents=True)
    assert cache.states() == {"dataset-copy/imagenet@3@group/gpu": "staging",
                              "dataset-copy/era5@2024@group/gpu": "evicting"}
    assert cache.stage("imagenet@3", "imagenet").ok
    assert cache.listing() == ["imagenet@3"]


def test_restage_replaces_a_corrupt_copy(cache: Cache) -> None:
    digest = dataset_digest(cache.src / "imagenet")
    assert cache.stage("imagenet@3", "imagenet", digest).ok
    os.chmod(cache.root / "imagenet@3" / "README", 0o644)
    (cache.root / "imagenet@3" / "README").write_text("tampered\n")
    again = cache.stage("imagenet@3", "imagenet", digest)
    assert again.ok and again.result["staged"] is True
    assert dataset_digest(cache.root / "imagenet@3") == digest
    assert cache.states() == {"dataset-copy/imagenet@3@group/gpu": "available"}
    intact = cache.stage("imagenet@3", "imagenet", digest)
    assert intact.result["staged"] is False  # already there and intact: nothing copied


def test_evict_removes_the_copy(cache: Cache) -> None:
    assert cache.stage("imagenet@3", "imagenet").ok
    reply = cache.request("delete", action="evict", id="dataset-copy/imagenet@3@group/gpu")
    assert reply.result["already_absent"] is False
    assert cache.listing() == [] and cache.states() == {}


def test_capacity_and_a_stage_that_does_not_fit(tmp_path: Path) -> None:
    cache = Cache(tmp_path, capacity=10_000)
    make_tree(cache.src / "imagenet")
    (cache.src / "big.bin").write_bytes(b"\x00" * 9000)
    assert cache.stage("imagenet@3", "imagenet").ok
    cap = ok(cache.t, "capacity")
    assert cap["total"] == 10_000 and cap["used"] == 8024 and cap["free"] == 10_000 - 8024
    reply = cache.stage("big@1", "big.bin")
    assert reply.error is not None and reply.error.code is ErrorCode.RESOURCE_EXHAUSTED
    assert cache.listing() == ["imagenet@3"]


@pytest.mark.parametrize(
    ("entry_id", "code"),
    [
        ("dataset-copy/imagenet@3@group/cpu", ErrorCode.INVALID_ARGUMENT),
        ("dataset-copy/../x@3@group/gpu", ErrorCode.INVALID_ARGUMENT),
        ("dataset-copy/imagenet@..@group/gpu", ErrorCode.INVALID_ARGUMENT),
        ("dataset-copy/imagenet", ErrorCode.INVALID_ARGUMENT),
        ("dataset-copy/-rf@3@group/gpu", ErrorCode.INVALID_ARGUMENT),
        ("dataset-copy/a\nb@3@group/gpu", ErrorCode.INVALID_ARGUMENT),
        # named like the cache's own folders: a later stage's sweep would remove it
        ("dataset-copy/.trash-imagenet@3@group/gpu", ErrorCode.INVALID_ARGUMENT),
        ("dataset-copy/.staging-x@3@group/gpu", ErrorCode.INVALID_ARGUMENT),
        ("volume/imagenet", ErrorCode.INVALID_ARGUMENT),
    ],
)
def test_bad_ids_are_refused(cache: Cache, entry_id: str, code: ErrorCode) -> None:
    reply = cache.request("create", entry={"id": entry_id, "spec": {"source": "imagenet"}})
    assert reply.error is not None and reply.error.code is code
    assert cache.listing() == []


def test_copies_are_immutable(cache: Cache) -> None:
    assert cache.stage("imagenet@3", "imagenet").ok
    reply = cache.request("update", entry={"id": "dataset-copy/imagenet@3@group/gpu"})
    assert reply.error is not None and reply.error.code is ErrorCode.FAILED_PRECONDITION


def test_another_owners_copy_is_not_evicted(cache: Cache) -> None:
    """Issue 19 §5: a request of site/other evicted the imagenet@3 copy."""
    assert cache.stage("imagenet@3", "imagenet").ok
    reply = call(cache.t, "delete", op_id="other", epoch=1, owner="site/other",
                 params={"id": f"dataset-copy/imagenet@3@{LOC}", "action": "evict"})
    assert reply.error is not None and reply.error.code is ErrorCode.FAILED_PRECONDITION
    assert f"owned by '{OWNER}', not 'site/other'" in reply.error.message
    assert cache.listing() == ["imagenet@3"] and cache.states()[
        f"dataset-copy/imagenet@3@{LOC}"] == "available"
