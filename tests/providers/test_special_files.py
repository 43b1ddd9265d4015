"""FIFOs, sockets, devices and links where a dataset's files should be: refused at once,
never waited on (a FIFO's open() blocks until a writer comes, holding the apply's lock)."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import reconciler.providers.dataset_digest as dataset_digest_module
from reconciler.protocol import ErrorCode
from reconciler.providers.dataset_digest import DatasetError, dataset_digest
from tests.providers.kit import inventory
from tests.providers.test_dataset_copy import Cache, make_tree

HANG = 5.0  # seconds after which a call counts as blocked


@contextmanager
def unblocks(fifos: list[Path]) -> Iterator[Callable[[], bool]]:
    """If the block has not finished within ``HANG`` seconds, open each FIFO for writing
    (which releases a reader blocked in open) so the test fails instead of hanging.
    Yields a function that says whether that was needed."""
    done, rescued = threading.Event(), threading.Event()

    def rescue() -> None:
        if done.wait(HANG):
            return
        rescued.set()
        for fifo in fifos:
            with contextlib.suppress(OSError):  # nobody is blocked on this one
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    thread = threading.Thread(target=rescue, daemon=True)
    thread.start()
    try:
        yield rescued.is_set
    finally:
        done.set()
        thread.join()


def unix_socket(path: Path) -> socket.socket:
    """A listening socket file at ``path`` (bound by a relative name: sun_path is short)."""
    sock = socket.socket(socket.AF_UNIX)
    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        sock.bind(path.name)
    finally:
        os.chdir(cwd)
    return sock


Maker = Callable[[Path], object]
SPECIALS: dict[str, tuple[Maker, str]] = {
    "fifo": (os.mkfifo, "a FIFO (named pipe)"),
    "socket": (unix_socket, "a socket"),
    "link": (lambda p: p.symlink_to(p.with_name("README")), "a symbolic link"),
}
if os.geteuid() == 0:
    SPECIALS["char-device"] = (lambda p: os.mknod(p, stat.S_IFCHR | 0o600, os.makedev(1, 3)),
                               "a character device")
    SPECIALS["block-device"] = (lambda p: os.mknod(p, stat.S_IFBLK | 0o600, os.makedev(7, 0)),
                                "a block device")


@pytest.fixture
def cache(tmp_path: Path) -> Cache:
    c = Cache(tmp_path)
    make_tree(c.src / "imagenet")
    return c


@pytest.mark.parametrize("kind", sorted(SPECIALS))
def test_a_special_file_as_the_source_is_refused_at_once(cache: Cache, kind: str) -> None:
    make, what = SPECIALS[kind]
    make(cache.src / "weights.pt")
    with unblocks([cache.src / "weights.pt"]) as hung:
        reply = cache.stage("weights@1", "weights.pt")
    assert not hung()
    assert reply.error is not None and reply.error.code is ErrorCode.FAILED_PRECONDITION
    assert reply.error.message.startswith(f"dataset source {cache.src / 'weights.pt'} is {what}")
    assert cache.listing() == [] and cache.states() == {}


@pytest.mark.parametrize("kind", sorted(SPECIALS))
def test_a_special_file_inside_the_source_folder_is_refused_at_once(
    cache: Cache, kind: str
) -> None:
    make, what = SPECIALS[kind]
    make(cache.src / "imagenet" / "train" / "shard" / "002.bin")
    with unblocks([cache.src / "imagenet" / "train" / "shard" / "002.bin"]) as hung:
        reply = cache.stage("imagenet@3", "imagenet")
        with pytest.raises(DatasetError, match=re.escape(f"train/shard/002.bin is {what}")):
            dataset_digest(cache.src / "imagenet")
    assert not hung()
    assert reply.error is not None and reply.error.code is ErrorCode.FAILED_PRECONDITION
    assert f"train/shard/002.bin is {what}; a dataset holds only" in reply.error.message
    assert cache.listing() == []


def test_a_fifo_swapped_in_after_the_listing_is_refused_at_once(
    cache: Cache, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listing saw a regular file; by the time it is opened it is a FIFO. Only the
    descriptor's fstat can tell, and the non-blocking open makes sure there is one."""
    victim = cache.src / "imagenet" / "train" / "labels.csv"
    real = dataset_digest_module.open_node

    def swap_then_open(dir_fd: int | None, name: str | Path, shown: str
                       ) -> tuple[int, os.stat_result]:
        if str(name) == "labels.csv":
            victim.unlink()
            os.mkfifo(victim)
        return real(dir_fd, name, shown)

    monkeypatch.setattr(dataset_digest_module, "open_node", swap_then_open)
    with unblocks([victim]) as hung:
        reply = cache.stage("imagenet@3", "imagenet")
    assert not hung()
    assert reply.error is not None and reply.error.code is ErrorCode.FAILED_PRECONDITION
    assert "train/labels.csv is a FIFO (named pipe)" in reply.error.message


def test_a_fifo_planted_in_a_copy_makes_it_corrupt_not_a_hang(cache: Cache) -> None:
    assert cache.stage("imagenet@3", "imagenet").ok
    os.mkfifo(cache.root / "imagenet@3" / "train" / "pipe")
    with unblocks([cache.root / "imagenet@3" / "train" / "pipe"]) as hung:
        state = inventory(cache.t)["dataset-copy/imagenet@3@group/gpu"]["state"]
    assert not hung() and state == "corrupt"


@pytest.mark.parametrize("where", ["top", "inside"])
def test_xce_digest_on_a_fifo_is_a_clear_user_error(tmp_path: Path, where: str) -> None:
    tree = make_tree(tmp_path / "ds")
    fifo = tree / "train" / "pipe" if where == "inside" else tmp_path / "pipe"
    os.mkfifo(fifo)
    target = tree if where == "inside" else fifo
    env = {**os.environ, "XCE_CRASH_DIR": str(tmp_path / "crashes")}
    with unblocks([fifo]):
        done = subprocess.run([sys.executable, "-m", "reconciler.cmds.digest", str(target)],
                              capture_output=True, text=True, timeout=HANG * 3, env=env)
    shown = f"{target}: train/pipe" if where == "inside" else str(fifo)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (f"xce-digest: {shown} is a FIFO (named pipe); a dataset holds only "
                           "regular files and folders: replace or remove it\n")
    assert not (tmp_path / "crashes").exists()


def test_xce_digest_goes_on_with_the_other_paths(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from reconciler.cmds.digest import main

    good = make_tree(tmp_path / "ds")
    os.mkfifo(tmp_path / "pipe")
    assert main([str(tmp_path / "pipe"), str(tmp_path / "missing"), str(good)]) == 1
    out, err = capsys.readouterr()
    assert out == f"{dataset_digest(good)}  {good}\n"
    assert err.splitlines() == [
        f"xce-digest: {tmp_path / 'pipe'} is a FIFO (named pipe); a dataset holds only regular "
        "files and folders: replace or remove it",
        f"xce-digest: {tmp_path / 'missing'}: no such file or folder",
    ]
