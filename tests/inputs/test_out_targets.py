"""``--out`` replaces only a regular file: a device, FIFO or folder in its place is refused
with XCE037 and left as it was (as root, ``xce-plan --out /dev/full`` used to replace the
device node with the plan; a FIFO there made ``xce-policy compile`` wait for a reader)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from compiler.cmds.compile import main as compile_main
from compiler.core import codes
from tests.apply.small_site import write_site
from tests.inputs.test_input_commands import drive

Maker = Callable[[Path], None]
TARGETS: dict[str, tuple[Maker, Callable[[int], bool], str]] = {
    "fifo": (os.mkfifo, stat.S_ISFIFO, "a FIFO (named pipe)"),
    "folder": (Path.mkdir, stat.S_ISDIR, "a folder"),
    "link to a fifo": (lambda p: (os.mkfifo(p.with_suffix(".fifo")),
                                  p.symlink_to(p.with_suffix(".fifo").name))[0],
                       stat.S_ISFIFO, "a symbolic link to"),
}
if os.geteuid() == 0:  # /dev/full's numbers: a device node only root may make
    TARGETS["character device"] = (lambda p: os.mknod(p, stat.S_IFCHR | 0o600,
                                                      os.makedev(1, 7)),
                                   stat.S_ISCHR, "a character device")


@pytest.fixture(scope="module")
def here(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small site, compiled, and an empty live map to plan against (with --force)."""
    folder = tmp_path_factory.mktemp("out")
    write_site(folder / "site")
    assert compile_main([str(folder / "site"), "--out", str(folder / "build")]) == 0
    (folder / "empty.json").write_text('{"entries": []}')
    return folder


PLAN = ["--desired", "build/supply-map.json", "--live", "empty.json"]
# each command with --out: its argv, and the file in ``out`` a target takes the place of
OUTS: dict[str, tuple[list[str], str]] = {
    "xce-plan": ([*PLAN, "--force", "--out", "{out}/plan.json"], "plan.json"),
    "xce-compile": (["site", "--out", "{out}"], "manifest.json"),
    "xce-drift": ([*PLAN, "--no-record", "--out", "{out}/drift.html"], "drift.html"),
    "xce-policy": (["compile", "--repo", ".", "--site", "site", "--out", "{out}"],
                   "allowlists.json"),
}


@pytest.mark.parametrize("command", sorted(OUTS))
def test_out_refuses_what_is_not_a_regular_file_and_leaves_it(command: str, here: Path,
                                                              tmp_path: Path) -> None:
    argv, name = OUTS[command]
    cases, targets = [], []
    for i, (make, _, _) in enumerate(TARGETS.values()):
        out = tmp_path / f"out{i}"
        out.mkdir()
        make(out / name)
        targets.append((out / name, sorted(os.listdir(out))))
        cases.append({"command": command, "argv": [a.format(out=out) for a in argv]})
    for (target, before), (kind, (_, still, words)), result in zip(
        targets, TARGETS.items(), drive(cases, here), strict=True
    ):
        assert result["status"] == 1, (kind, result)
        assert f"{target}: error[{codes.OUT_NOT_A_FILE}]: is {words}" in result["stderr"]
        assert still(target.stat().st_mode), kind
        assert sorted(os.listdir(target.parent)) == before, kind  # nothing else written


def test_out_still_replaces_a_regular_file_and_a_link_to_nothing(here: Path,
                                                                 tmp_path: Path) -> None:
    (tmp_path / "plan.json").write_text("old")
    (tmp_path / "gone.json").symlink_to("nowhere")
    argv = [*PLAN, "--force", "--out"]
    ran = drive([{"command": "xce-plan", "argv": [*argv, str(tmp_path / name)]}
                 for name in ("plan.json", "gone.json")], here)
    assert [r["status"] for r in ran] == [2, 2], ran
    for name in ("plan.json", "gone.json"):
        assert (tmp_path / name).read_bytes().startswith(b"{")
        assert not (tmp_path / name).is_symlink()
