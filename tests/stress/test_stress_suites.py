"""The short mode of every stress suite (issue 20 §6), as the test command runs it.

Small counts and a fixed seed (``XCE_STRESS_SEED`` to change it, ``XCE_STRESS_SCALE`` to
multiply the counts); a failure lists every finding with the seed that repeats it. The
full sizes are ``scripts/stress.sh`` (docs/reliability.md). The SIGKILL series of saved
plans, the directory races and the drift canary have tests of their own
(tests/apply/test_apply_crash_repeated.py, tests/providers/test_directory_races.py,
tests/drift/test_canary.py): the short modes here run what those do not.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.state.targets import PG_ENV
from tests.stress import (
    apply_kills,
    canaries,
    compile_fuzz,
    concurrency,
    fs_races,
    provider_faults,
)
from tests.stress.common import short_count, short_seed

pytestmark = [pytest.mark.stress, pytest.mark.slow]
PG = bool(os.environ.get(PG_ENV))


def test_compile_fuzz(tmp_path: Path) -> None:
    """60 mutants (6 as processes), 10 schema documents, 4 tampered plans."""
    compile_fuzz.run(short_count(60), short_seed(), tmp_path).check()


def test_provider_faults(tmp_path: Path) -> None:
    """6 modes of the matrix, spread over exec, JSON lines and the built-ins."""
    provider_faults.run(short_count(6), short_seed(), tmp_path).check()


def test_apply_kills_fresh_plans_and_repeated_drift(tmp_path: Path) -> None:
    """The same drift twice, each fixed by a killed --auto-approve series (saved plans: the
    crash test)."""
    figures = apply_kills.run(short_count(2), short_seed(), tmp_path, modes=("drift",),
                              pg=False)
    figures.check()
    assert figures.counts["SIGKILLs"] >= 2 and figures.counts["drift fixed"] >= 1


def test_concurrency(tmp_path: Path) -> None:
    """A lease taken over, on SQLite and PostgreSQL (when given)."""
    figures = concurrency.run(short_count(1), short_seed(), tmp_path, kinds=("lease",), pg=PG)
    figures.check()
    assert figures.counts["takeovers"] >= 1


def test_fs_races(tmp_path: Path) -> None:
    """Ten calls per race: create, delete, evict, quota, an empty mount point."""
    figures = fs_races.run(short_count(50), short_seed(), tmp_path)
    figures.check()
    assert figures.counts["races"] >= len(fs_races.RACES)


def test_canaries(tmp_path: Path) -> None:
    """One round on SQLite: every command, file, row, mail and HTTP body."""
    figures = canaries.run(short_count(1), short_seed(), tmp_path, pg=False)
    figures.check()
    assert figures.counts["mails"] and figures.counts["HTTP requests"]
