"""The job-directory benchmark runs and counts every job directory it made."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_benchmark_reports_every_job_dir_it_made(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_job_dirs.py"), "--jobs", "30", "7",
         "--users", "4", "--files", "5", "--dir", str(tmp_path)],
        capture_output=True, text=True, check=True, timeout=60)
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["30", "7"]
    assert all("× 5 files, 4 users: inventory" in line for line in lines)
    assert list(tmp_path.iterdir()) == []  # its trees are removed again
