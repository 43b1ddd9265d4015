"""``read_input`` and ``write_atomic`` themselves: what the command-level tests do not reach
(a socket, a folder, a file that is longer than ``fstat`` said, the exact cap)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from compiler.core import codes
from compiler.core.file_io import Cap, Refused, read_input, write_atomic

SMALL = Cap(10, "a test input")


def test_a_regular_file_up_to_its_cap_is_read_and_one_byte_more_is_refused(
    tmp_path: Path,
) -> None:
    (tmp_path / "ten").write_bytes(b"0123456789")
    (tmp_path / "eleven").write_bytes(b"0123456789A")
    (tmp_path / "link").symlink_to("ten")
    assert read_input(tmp_path / "ten", SMALL) == b"0123456789"
    assert read_input(tmp_path / "link", SMALL) == b"0123456789"  # a link to one is fine
    with pytest.raises(Refused) as refused:
        read_input(tmp_path / "eleven", SMALL, "eleven")
    assert refused.value.problem.code == codes.INPUT_TOO_LARGE
    assert refused.value.problem.message == ("is larger than 10B, the most a test input may "
                                             "hold (it holds 11B)")


def test_a_file_longer_than_its_size_says_is_cut_at_the_cap() -> None:
    """/proc files say they are empty: the cap holds while reading, not only by fstat."""
    with pytest.raises(Refused) as refused:
        read_input("/proc/self/status", SMALL)
    assert refused.value.problem.code == codes.INPUT_TOO_LARGE
    assert refused.value.problem.message.endswith("may hold")  # its size was not known


def test_a_socket_and_a_folder_are_no_input(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    server = socket.socket(socket.AF_UNIX)
    monkeypatch.chdir(tmp_path)  # sun_path is short: bind by a relative name
    server.bind("sock")
    try:
        for name, what in (("sock", "a socket"), (".", "a folder")):
            with pytest.raises(Refused) as refused:
                read_input(tmp_path / name, SMALL, name)
            assert refused.value.problem.code == codes.NOT_A_REGULAR_FILE
            assert refused.value.problem.message == f"is {what}, not a regular file"
            assert refused.value.problem.where is not None
            assert refused.value.problem.where.file == name
    finally:
        server.close()


def test_what_cannot_be_opened_stays_the_callers_to_name(tmp_path: Path) -> None:
    """No such file, no permission: an OSError, which each command reports with its code."""
    with pytest.raises(FileNotFoundError):
        read_input(tmp_path / "missing", SMALL)


def test_write_atomic_keeps_the_mode_asked_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    write_atomic(tmp_path / "sub" / "plan.json", b"{}", mode=0o600)
    assert (tmp_path / "sub" / "plan.json").stat().st_mode & 0o777 == 0o600
    assert os.listdir(tmp_path / "sub") == ["plan.json"]
