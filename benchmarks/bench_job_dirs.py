"""Inventory of job directories: the directory provider's ``inventory`` over many job dirs.

Run: ``.venv/bin/python benchmarks/bench_job_dirs.py [--jobs 5000 50000] [--users 100]
[--files 3] [--dir DIR]``.
Makes ``<root>/<user>/<jobid>/{in,out,err}`` trees (``--files`` small files each, spread
over ``--users`` user directories) on a real filesystem (``--dir``, default a temporary
directory), then times the provider's whole ``inventory`` through its transport, as
``xce-plan`` asks it: one walk per job for its size and newest change. The page cache is
warm (the trees were just made); a cold cache on a network filesystem costs one metadata
round trip per directory and file more.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reconciler.protocol import Request
from reconciler.providers.registry import open_provider


def make_trees(root: Path, jobs: int, users: int, files: int) -> None:
    for n in range(jobs):
        top = root / f"user{n % users}" / str(1_000_000 + n)
        top.mkdir(parents=True)
        for i in range(files):
            (top / ("in", "out", "err")[i] if i < 3 else top / f"f{i}").write_bytes(b"x" * 100)


def run(workdir: Path, jobs: int, users: int, files: int) -> tuple[float, int]:
    t = open_provider("shared-fs", {"kind": "directory", "params": {}}, workdir)
    try:
        t.call(Request("create", op_id="vol", epoch=1, owner="site/bench", params={
            "entry": {"id": "volume/shared", "spec": {"path": "/shared"}}}))
        make_trees(workdir / "fs" / "shared", jobs, users, files)
        start = time.perf_counter()
        reply = t.call(Request("inventory"))
        took = time.perf_counter() - start
        assert reply.ok, reply.to_json()
        found = sum(1 for e in reply.result["entries"] if e["kind"] == "job-dir")
        return took, found
    finally:
        t.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[5000, 50000])
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--files", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    for jobs in args.jobs:
        workdir = Path(tempfile.mkdtemp(prefix="xce-bench-jobs-", dir=args.dir))
        try:
            took, found = run(workdir, jobs, args.users, args.files)
        finally:
            shutil.rmtree(workdir)
        assert found == jobs, (found, jobs)
        print(f"{jobs:>7} job dirs × {args.files} files, {args.users} users: inventory "
              f"{took:6.2f} s ({took / jobs * 1e6:5.0f} µs per job dir)", flush=True)


if __name__ == "__main__":
    main()
