"""Concurrency (issue 20 §6): several applies at once, an apply beside ``xce-map`` and
``xce-drift``, a store that goes away under a running apply, a lease taken over — on
SQLite and PostgreSQL — 0 duplicates.

Every case runs real ``xce-apply`` processes on the exec site of tests/apply/crashing.py
(an exec provider whose log says which entries really changed), and ends with one more
apply that must finish, ``xce-plan`` that must have nothing to do, and no entry changed
twice. Cases:

- ``parallel``: 2–8 applies started together (a saved plan and ``--auto-approve``,
  ``--lock-timeout``); each exits 0;
- ``beside``: the e2e world applied, a config change applied while ``xce-map report`` and
  ``xce-drift`` run in loops (the state store and the controller map shared);
- ``pg-terminated`` / ``pg-restarted``: the apply's backends ended by
  ``pg_terminate_backend``, and the server stopped and restarted (a relay in front of it,
  tests/state/pooler.py, as the shared server must not stop);
- ``sqlite-full`` / ``sqlite-read-only``: the store on a tmpfs that fills up, or on an ext4
  loop device that turns read-only after an error, under the apply (needs mount: root);
- ``lease``: an apply stopped (SIGSTOP) past its lease, another takes over and finishes,
  the first resumed (SIGCONT) must stop without changing anything.

``python -m tests.stress.concurrency --count 40`` (cases, both stores each).
"""

from __future__ import annotations

import io
import os
import random
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path

import psycopg
import pytest

import reconciler.cmds.plan as plan_cli
from reconciler.state import OpStatus
from tests.apply.conftest import Site
from tests.apply.crashing import ROOT, Crashing, exec_site, start_apply
from tests.drift.world import APPLIED, HOSTS, make_site
from tests.e2e.steps import run_steps
from tests.state.pooler import Pooler
from tests.state.targets import PG_ENV, Target, with_options
from tests.stress.apply_kills import targets
from tests.stress.common import Figures, main, measured, rng_for

Case = Callable[[Figures, str, Site, random.Random], None]


def _quiet_plan(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(out):
        code = plan_cli.main(argv)
    return code, out.getvalue()


def settled(figures: Figures, name: str, site: Site, crashing: Crashing) -> None:
    """One more apply finishes, nothing is left to plan, no entry changed twice."""
    log = site.root / "final.log"
    last = start_apply(site.cli_args("--auto-approve", "--lock-timeout", "60"), log)
    last.communicate(timeout=600)
    if last.returncode != 0:
        figures.counts["stuck"] += 1
        figures.fail(name, f"the apply after the case exits {last.returncode}: "
                     f"{log.read_text()[-1200:]}")
    code, text = _quiet_plan(crashing.plan_argv)
    if code != 0:
        figures.counts["lost"] += 1
        figures.fail(name, f"xce-plan after the case exits {code}: {text[-800:]}")
    twice = sorted(e for e, n in Counter(site.executed()).items() if n > 1)
    if twice:
        figures.counts["duplicates"] += len(twice)
        figures.fail(name, f"changed twice: {twice[:6]}")
    figures.counts["cases"] += 1


def _outcome(figures: Figures, name: str, proc: subprocess.Popen[str], log: Path,
             allowed: tuple[int, ...] = (0,)) -> int:
    proc.communicate(timeout=600)
    text = log.read_text()
    if proc.returncode not in allowed or "Traceback" in text or "XCE900" in text:
        figures.fail(name, f"exit {proc.returncode}: {text[-1200:]}")
    return proc.returncode


def parallel(figures: Figures, name: str, site: Site, rng: random.Random) -> None:
    crashing = exec_site(site)
    n = rng.randint(2, 8)
    procs = []
    for i in range(n):
        saved = rng.random() < 0.5
        argv = crashing.argv if saved else site.cli_args("--auto-approve")
        log = site.root / f"apply-{i}.log"
        # a saved plan that an --auto-approve run applied first is stale (3): refused, right
        allowed = (0, 3) if saved else (0,)
        procs.append((start_apply([*argv, "--lock-timeout", "300"], log), log, allowed))
    for proc, log, allowed in procs:
        _outcome(figures, f"{name} ({n} applies)", proc, log, allowed)
    figures.counts["parallel applies"] += n
    settled(figures, name, site, crashing)


def _waiting(site: Site, digest: str, done: int, proc: subprocess.Popen[str]) -> None:
    """Until ``done`` ops of the plan are done (or the apply ended)."""
    with site.store() as store:
        while len(store.done_op_ids(digest)) < done and proc.poll() is None:
            time.sleep(0.01)


def pg_terminated(figures: Figures, name: str, site: Site, rng: random.Random) -> None:
    if site.target.backend != "postgresql":
        return
    app = f"xce-stress-{secrets.token_hex(4)}"
    named = Site(site.root, Target("postgresql", with_options(site.target.url,
                                                             application_name=app)))
    crashing = exec_site(named)
    digest, ops = crashing.ops()
    log = site.root / "apply.log"
    proc = start_apply(crashing.argv, log)
    url = os.environ[PG_ENV]
    with psycopg.connect(url, autocommit=True) as admin:
        for point in sorted(rng.sample(range(1, len(ops)), 3)):
            _waiting(site, digest, point, proc)
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE application_name = %s", (app,))
            figures.counts["backends terminated"] += 1
    _outcome(figures, name, proc, log, allowed=(0, 1))
    settled(figures, name, named, crashing)


def pg_restarted(figures: Figures, name: str, site: Site, rng: random.Random) -> None:
    if site.target.backend != "postgresql":
        return
    relay = Pooler(site.target.url)
    try:
        relayed = Site(site.root, Target("postgresql", relay.url))
        crashing = exec_site(relayed)
        digest, ops = crashing.ops()
        log = site.root / "apply.log"
        proc = start_apply(crashing.argv, log)
        _waiting(site, digest, rng.randrange(1, len(ops)), proc)
        relay.down()
        time.sleep(rng.choice([0.1, 1.0, 3.0]))  # the server away for a while
        relay.up()
        figures.counts["server restarts"] += 1
        _outcome(figures, name, proc, log, allowed=(0, 1))
        settled(figures, name, relayed, crashing)
    finally:
        relay.down()


@contextmanager
def tmpfs(folder: Path, size: str) -> Iterator[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                   check=True, capture_output=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False, capture_output=True)


def _can_mount() -> bool:
    return os.geteuid() == 0 and sys.platform.startswith("linux")


@contextmanager
def ext4(folder: Path, size: str) -> Iterator[Path]:
    """An ext4 file system on a loop device that turns read-only at its first error, as a
    real one does (``errors=remount-ro``): writers open on it cannot stop that, while a
    ``mount -o remount,ro`` of a disk with files open for writing is refused (busy)."""
    image = folder.with_suffix(".img")
    subprocess.run(["truncate", "-s", size, str(image)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True, capture_output=True)
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-o", "loop,errors=remount-ro", str(image), str(folder)],
                   check=True, capture_output=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False, capture_output=True)


def _device(folder: Path) -> str:
    return subprocess.run(["findmnt", "-no", "SOURCE", str(folder)], check=True,
                          capture_output=True, text=True).stdout.strip()


def _turn_read_only(disk: Path) -> None:
    """An error of the file system (ext4's own trigger): it is read-only from now on."""
    Path(f"/sys/fs/ext4/{Path(_device(disk)).name}/trigger_fs_error").write_text("stress\n")


def _repair(disk: Path) -> None:
    """As an admin does after such an error: unmount, fsck, mount again, read-write."""
    image = disk.with_suffix(".img")
    subprocess.run(["umount", str(disk)], check=True, capture_output=True)
    subprocess.run(["e2fsck", "-fy", str(image)], check=False, capture_output=True)
    subprocess.run(["mount", "-o", "loop,errors=remount-ro", str(image), str(disk)],
                   check=True, capture_output=True)


def sqlite_disk(figures: Figures, name: str, site: Site, rng: random.Random) -> None:
    """The store's disk fills up (a tmpfs), or turns read-only (ext4 after an error), under
    the apply; once the disk is repaired, the next apply finishes the plan."""
    if site.target.backend != "sqlite" or not _can_mount():
        return
    read_only = "read-only" in name
    disk_of = ext4(site.root / "disk", "32M") if read_only else tmpfs(site.root / "disk", "4m")
    with disk_of as disk:
        onto = Site(site.root, Target("sqlite", str(disk / "state.db")))
        crashing = exec_site(onto)
        digest, ops = crashing.ops()
        log = site.root / "apply.log"
        proc = start_apply(crashing.argv, log)
        _waiting(onto, digest, rng.randrange(1, len(ops) // 2), proc)
        if read_only:
            _turn_read_only(disk)
        else:
            _fill(disk / "filler")
        _outcome(figures, name, proc, log, allowed=(0, 1))
        figures.counts["disk faults"] += 1
        if read_only:
            _repair(disk)
        else:
            (disk / "filler").unlink(missing_ok=True)
        settled(figures, name, onto, crashing)


def _fill(path: Path) -> None:
    """Write until the disk is full (it may be full already: the store's own writes)."""
    chunk = b"\0" * 65536
    try:
        with path.open("wb") as fh:
            while True:
                fh.write(chunk)
                fh.flush()
    except OSError:
        pass


def lease(figures: Figures, name: str, site: Site, rng: random.Random) -> None:
    """Stopped past its lease, the first apply must not act once resumed."""
    crashing = exec_site(site)
    digest, ops = crashing.ops()
    first = start_apply([*crashing.argv, "--lock-ttl", "2"], site.root / "first.log")
    _waiting(site, digest, rng.randrange(1, len(ops) // 2), first)
    first.send_signal(signal.SIGSTOP)
    time.sleep(3)  # the lease (2 s) runs out: this wait is the point of the case
    second = start_apply([*crashing.argv, "--lock-timeout", "60"], site.root / "second.log")
    _outcome(figures, name + " (taking over)", second, site.root / "second.log")
    first.send_signal(signal.SIGCONT)
    _outcome(figures, name + " (resumed)", first, site.root / "first.log", allowed=(0, 1))
    figures.counts["takeovers"] += 1
    with site.store() as store:
        statuses = Counter(e.status for e in store.journal(plan_digest=digest))
    if statuses.get(OpStatus.DONE, 0) != len(ops):
        figures.fail(name, f"journal {dict(statuses)} for {len(ops)} ops")
    settled(figures, name, site, crashing)


def beside(figures: Figures, name: str, site: Site, rng: random.Random) -> None:
    """An apply of a config change while xce-map reports and xce-drift checks, in loops."""
    ws = make_site(site.root / "world")
    with pytest.MonkeyPatch.context() as mp:
        run_steps(ws, list(APPLIED), mp)  # type: ignore[arg-type]
    storage = ws.site / "storage.yaml"
    users = ", ".join(f"u{i:02d}" for i in range(rng.randint(10, 40)))
    storage.write_text(storage.read_text().replace("users: [alice, bob]",
                                                   f"users: [alice, bob, {users}]"))
    common = ["--workdir", str(ws.workdir), "--state", site.target.url]
    tools = {
        "map": [sys.executable, "-m", "reconciler.cmds.map", "--site", str(ws.site),
                "--workdir", str(ws.workdir), "report", "available", HOSTS],
        "drift": [sys.executable, "-m", "reconciler.cmds.drift", str(ws.site), *common],
    }
    stop = threading.Event()
    bad: list[str] = []

    def loop(tool: str) -> None:
        allowed = (0,) if tool == "map" else (0, 2)
        while not stop.is_set():
            run = subprocess.run(tools[tool], cwd=ROOT, capture_output=True, text=True)
            figures.counts[f"{tool} runs beside"] += 1
            if run.returncode not in allowed or "Traceback" in run.stderr:
                bad.append(f"{tool} exit {run.returncode}: {run.stderr[-600:]}")

    threads = [threading.Thread(target=loop, args=(t,), daemon=True) for t in tools]
    for t in threads:
        t.start()
    log = site.root / "apply.log"
    with log.open("w") as err:
        apply = subprocess.run([sys.executable, "-m", "reconciler.cmds.apply", str(ws.site),
                                "--auto-approve", *common, "--lock-timeout", "60"],
                               cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err)
    stop.set()
    for t in threads:
        t.join(120)
    if apply.returncode != 0:
        figures.fail(name, f"the apply beside exits {apply.returncode}: {log.read_text()[-800:]}")
    for line in bad:
        figures.fail(name, line)
    code, text = _quiet_plan([str(ws.site), *common])
    if code != 0:
        figures.fail(name, f"xce-plan after exits {code}: {text[-800:]}")
    figures.counts["cases"] += 1


CASES: dict[str, Case] = {
    "parallel": parallel, "beside": beside, "pg-terminated": pg_terminated,
    "pg-restarted": pg_restarted, "sqlite-full": sqlite_disk, "sqlite-read-only": sqlite_disk,
    "lease": lease,
}


def run(count: int, seed: int, root: Path, kinds: tuple[str, ...] = tuple(CASES),
        pg: bool = True) -> Figures:
    """``count`` cases, the kinds in turn (``parallel`` after each), on both stores."""
    figures = Figures("concurrency", seed)
    order = [k for kind in kinds if kind != "parallel" for k in (kind, "parallel")]
    with measured(figures):
        for i in range(count):
            kind = order[i % len(order)]
            with targets(root, f"c{i}", pg) as found:
                for target in found:
                    folder = root / f"case-{i}-{target.backend}"
                    folder.mkdir()
                    name = f"{kind} {i} on {target.backend}"
                    try:
                        CASES[kind](figures, name, Site(folder, target),
                                    rng_for(seed, kind, i))
                    except Exception as exc:
                        figures.fail(name, f"{type(exc).__name__}: {str(exc)[:800]}")
    return figures


if __name__ == "__main__":
    main(run, 40, __doc__ or "")
