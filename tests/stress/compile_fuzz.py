"""Compile fuzz (issue 20 §6): mutated site-configs in-process and as real ``xce-compile``
processes, JSON Schema agreement on mutated documents, and tampered saved plans.

Per mutant: no exception (in a process: no traceback, no XCE900), every error at a
file:line, a bounded time; a process also runs under a memory limit and a timeout, and
meets special files (FIFOs, /dev/zero, links to nowhere and to themselves, folders named
``*.yaml``). Per document of the schema part: ``tests/compiler/test_schema_agreement.py``'s
``judge`` and ``assert_agree``. Per tampered plan: ``xce-apply`` refuses it and nothing
changes.

``python -m tests.stress.compile_fuzz --count 20000``: 20,000 mutants, a tenth of them as
processes, 2,000 schema documents, 100 tampered plans.
"""

from __future__ import annotations

import io
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from compiler.compile import compile_site, located
from compiler.core.canonical import digest_of, dumps
from compiler.core.problems import Problem, Problems, Severity
from tests.apply.small_site import write_site
from tests.compiler.test_schema_agreement import BEYOND_SCHEMA, assert_agree, judge
from tests.e2e.workspace import SCENARIOS, SITES, materialize
from tests.stress.common import Figures, main, measured, rng_for
from tests.stress.mutants import IN_PROCESS, MUTATIONS, Files, mutate

ROOT = Path(__file__).resolve().parents[2]
CASE_SECONDS = 10.0  # one in-process compile; the valid sites take ~20 ms
PROCESS_SECONDS = 60.0
PROCESS_MEMORY = 2 << 30  # bytes of address space a compile process may take
IN_PROCESS_MEMORY = 4 << 30  # the fuzzing process itself, with its in-process compiles
SPECIAL = ["fifo", "dev-zero", "dangling-link", "link-loop", "folder", "dev-full", "empty"]
# Compiler errors a JSON Schema cannot say (docs/editors.md): a mutated document may hit them.
BEYOND_CODES = frozenset({"XCE202", "XCE203", "XCE205", "XCE206", "XCE103", "XCE104"})


def base_sites(root: Path) -> dict[str, Path]:
    """The e2e base site (every kind of entry) and the small CLI site, in ``root``."""
    e2e = materialize(root / "base-e2e", SITES / "base", SCENARIOS / "in_sync" / "site-config")
    return {"e2e": e2e, "small": write_site(root / "base-small")}


def yaml_files(site: Path) -> Files:
    return {p.name: p.read_bytes() for p in sorted(site.glob("*.yaml"))}


def lay_out(case: Path, base: Path, files: Files) -> None:
    """``case`` holds the base site's other files and exactly ``files`` as its YAML."""
    if case.exists():
        shutil.rmtree(case)
    shutil.copytree(base, case, ignore=shutil.ignore_patterns("*.yaml", ".xce", "build"))
    for name, data in files.items():
        (case / name).write_bytes(data)


def unplaced(problems: list[Problem]) -> list[Problem]:
    """Errors with no file:line (a site-config's every error has a place in a file)."""
    return [p for p in problems if p.severity is Severity.ERROR
            and (p.where is None or not p.where.file or p.where.line is None)]


def compile_in_process(figures: Figures, case: Path, name: str) -> None:
    problems = Problems()
    start = time.monotonic()
    try:
        compiled, files = compile_site(case, problems)
        shown = located(problems, files)
    except Exception as exc:  # what xce-compile would report as XCE900
        figures.counts["in-process crashes"] += 1
        figures.fail(name, f"compile raised {type(exc).__name__}: {str(exc)[:300]}")
        return
    took = time.monotonic() - start
    figures.counts["in-process mutants"] += 1
    figures.counts["in-process valid"] += compiled is not None and not problems.has_errors
    if took > CASE_SECONDS:
        figures.fail(name, f"compile took {took:.1f} s")
    for p in unplaced(shown):
        figures.counts["errors without a position"] += 1
        figures.fail(name, f"{p.code} without a position: {p.message[:200]}")


def make_special(path: Path, kind: str) -> None:
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind in ("dev-zero", "dev-full"):
        path.symlink_to("/dev/zero" if kind == "dev-zero" else "/dev/full")
    elif kind == "dangling-link":
        path.symlink_to(path.with_name("nowhere.yaml"))
    elif kind == "link-loop":
        path.symlink_to(path.name)
    elif kind == "folder":
        path.mkdir()
    else:
        path.write_bytes(b"")


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (PROCESS_MEMORY, PROCESS_MEMORY))


def compile_process(figures: Figures, case: Path, name: str) -> None:
    """``xce-compile CASE --check --format json`` as a process: exit 0 or 1, a JSON
    document of located problems, no XCE900, within the time and memory given."""
    argv = [sys.executable, "-m", "compiler.cmds.compile", str(case), "--check", "--format", "json"]
    env = {**os.environ, "XCE_CRASH_DIR": str(case.parent / "crashes")}
    try:
        run = subprocess.run(argv, cwd=ROOT, capture_output=True, timeout=PROCESS_SECONDS,
                             preexec_fn=_limits, env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        figures.counts["process timeouts"] += 1
        figures.fail(name, f"xce-compile ran past {PROCESS_SECONDS:.0f} s")
        return
    figures.counts["process mutants"] += 1
    err = run.stderr.decode("utf-8", "replace")
    if run.returncode not in (0, 1) or "Traceback" in err or "internal error" in err:
        figures.counts["process crashes"] += 1
        figures.fail(name, f"exit {run.returncode}: {err[-400:]}")
        return
    try:
        doc = json.loads(run.stdout)
    except ValueError:
        figures.fail(name, f"stdout is not the JSON document: {run.stdout[:200]!r}")
        return
    for p in doc.get("problems", []):
        if p["code"] == "XCE900":
            figures.counts["internal errors (XCE900)"] += 1
            figures.fail(name, f"XCE900: {p['message']}")
        elif p["severity"] == "error" and (not p.get("file") or p.get("line") is None):
            figures.counts["errors without a position"] += 1
            figures.fail(name, f"{p['code']} without a position: {p['message'][:200]}")


@contextmanager
def memory_bound(size: int) -> Iterator[None]:
    """This process's address space bounded while in-process mutants compile: a compile that
    would take all memory (an alias cycle walked for ever) is a MemoryError, a finding
    naming its mutant, instead of the kernel killing the whole run."""
    before = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (size, before[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, before)


def fuzz(figures: Figures, root: Path, seed: int, count: int, processes: int) -> None:
    with memory_bound(IN_PROCESS_MEMORY):
        _fuzz(figures, root, seed, count, processes)


def _fuzz(figures: Figures, root: Path, seed: int, count: int, processes: int) -> None:
    bases = base_sites(root)
    originals = {name: yaml_files(path) for name, path in bases.items()}
    case = root / "case"
    for i in range(count):
        as_process = i < processes
        rng = rng_for(seed, "mutant", i)
        site = rng.choice(sorted(bases))
        kinds = list(MUTATIONS) if as_process else IN_PROCESS
        how, files = mutate(rng, originals[site], kinds)
        special = rng.choice(SPECIAL) if as_process and rng.random() < 0.15 else None
        name = f"mutant {i} ({site}: {how}{', ' + special if special else ''})"
        lay_out(case, bases[site], files)
        if special:
            make_special(case / rng.choice(sorted(files)), special)
            figures.counts["special files"] += 1
        if as_process:
            compile_process(figures, case, name)
        else:
            compile_in_process(figures, case, name)


# --- schema agreement ------------------------------------------------------------------

def schema_documents(figures: Figures, root: Path, seed: int, count: int) -> None:
    """Single files, mutated: the editor schema and the compiler agree on each."""
    files = {f"{site}/{n}": data for site, path in base_sites(root / "schema").items()
             for n, data in yaml_files(path).items()}
    kinds = ["structural", "hostile-text", "line-edit", "structural"]
    for i in range(count):
        rng = rng_for(seed, "schema", i)
        which = rng.choice(sorted(files))
        how, mutated = mutate(rng, {which: files[which]}, kinds)
        data = mutated[which]
        name = f"schema document {i} ({which}: {how})"
        try:
            verdict = judge(data, Path(which).name)
        except Exception as exc:
            figures.fail(name, f"judging raised {type(exc).__name__}: {exc}")
            continue
        figures.counts["schema documents"] += 1
        if verdict.schema or verdict.compiler:
            figures.counts["schema documents refused"] += 1
        beyond = frozenset(".".join(str(x) for x in p.where.ypath) for p in verdict.compiler
                           if p.code in BEYOND_CODES and p.where is not None)
        try:
            assert_agree(verdict, beyond & _unmatched(verdict))
        except AssertionError as err:
            figures.counts["schema disagreements"] += 1
            figures.fail(name, str(err).replace("\n", " | ")[:600])


def _unmatched(verdict: Any) -> frozenset[str]:
    return frozenset(".".join(str(x) for x in p.where.ypath) for p in verdict.unmatched()
                     if p.where is not None)


assert BEYOND_SCHEMA  # the corpus's own list: the codes above are its kinds


# --- tampered saved plans --------------------------------------------------------------

def _edits(rng: random.Random, body: dict[str, Any]) -> Iterator[str]:
    """Change one thing a plan decides, in ``body``; yield what was changed."""
    actions = body["plan"]["actions"]
    action = rng.choice(actions)
    choice = rng.randrange(8)
    if choice == 0:
        body["destroy"] = not body["destroy"]
        yield "destroy flipped"
    elif choice == 1:
        actions.append({**action, "action": "delete", "id": action["id"] + "-x"})
        yield "a delete added"
    elif choice == 2:
        action["entry"] = action["entry"].rsplit("/", 1)[0] + "/intruder"
        yield "an action's entry renamed"
    elif choice == 3:
        actions.remove(action)
        yield "an action dropped"
    elif choice == 4:
        body["plan"]["desired_digest"] = "sha256:" + "0" * 64
        yield "desired digest replaced"
    elif choice == 5:
        body["origin"] = {**body["origin"], "workdir": body["origin"]["workdir"] + "-moved"}
        yield "origin moved"
    elif choice == 6:
        fps = body["plan"].setdefault("fingerprints", {})
        for key in [*list(fps)[:3], action["entry"]]:
            fps[key] = "sha256:" + "1" * 64
        yield "fingerprints replaced"
    else:
        action["action"] = rng.choice(["delete", "release", "evict", "update"])
        yield "an action's verb changed"


def tamper(rng: random.Random, raw: bytes) -> tuple[str, bytes]:
    """Bytes flipped or cut; or a field changed, with the digest left or made again."""
    how = rng.randrange(4)
    if how == 0:
        i = rng.randrange(len(raw))
        return "byte flipped", raw[:i] + bytes([raw[i] ^ 0x20]) + raw[i + 1:]
    if how == 1:
        return "truncated", raw[:rng.randrange(len(raw))]
    doc = json.loads(raw)
    what = next(_edits(rng, doc["body"]))
    if how == 3:
        doc["digest"] = digest_of(doc["body"])
        what += ", digest made again"
    return what, dumps(doc)


def _quiet(main_fn: Any, argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = int(main_fn(argv))
    return code, out.getvalue() + err.getvalue()


def _tree(folder: Path) -> dict[str, int]:
    """What the providers hold on disk: each path and its size (the state store aside)."""
    return {str(p.relative_to(folder)): p.stat().st_size for p in folder.rglob("*")
            if p.is_file() and "state.sqlite" not in p.name}


def tampered_plans(figures: Figures, root: Path, seed: int, count: int) -> None:
    import reconciler.cmds.apply as apply_cli
    import reconciler.cmds.plan as plan_cli

    site = write_site(root / "tamper" / "site")
    plan_file = root / "tamper" / "plan.json"
    code, text = _quiet(plan_cli.main, [str(site), "--out", str(plan_file)])
    assert code == 2, text
    raw = plan_file.read_bytes()
    pristine = root / "tamper" / "pristine"
    shutil.copytree(site, pristine)
    for i in range(count):
        what, data = tamper(rng_for(seed, "tamper", i), raw)
        shutil.rmtree(site)
        shutil.copytree(pristine, site)
        before = _tree(site / ".xce")
        plan_file.write_bytes(data)
        code, text = _quiet(apply_cli.main, [str(plan_file), "--format", "json"])
        figures.counts["tampered plans"] += 1
        changed = _tree(site / ".xce") != before
        if code == 0 or changed:
            figures.counts["tampered plans applied"] += 1
            figures.fail(f"tampered plan {i} ({what})",
                         f"xce-apply exit {code}, providers changed: {changed}")
        elif "XCE900" in text or "Traceback" in text:
            figures.fail(f"tampered plan {i} ({what})", f"crashed: {text[-300:]}")


def run(count: int, seed: int, root: Path) -> Figures:
    """``count`` mutants (a tenth as processes), ``count/10`` schema documents and
    ``count/200`` tampered plans."""
    figures = Figures("compile-fuzz", seed)
    with measured(figures):
        fuzz(figures, root, seed, count, processes=max(2, count // 10))
        schema_documents(figures, root, seed, max(10, count // 10))
        tampered_plans(figures, root, seed, max(4, count // 200))
    return figures


if __name__ == "__main__":
    main(run, 20_000, __doc__ or "")
