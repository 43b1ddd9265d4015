"""``xce-compile``: site-config folder → build/supply-map.json, bindings.json, allowlists.json
(with the policies docs/policies.md says), manifest.json."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from compiler.cli.options import add_format, add_policies
from compiler.cli.problem_render import FORMATS, render
from compiler.cli.runner import EXIT_ERROR, EXIT_OK, UsageParser, run_cli
from compiler.cli.site_locate import HELP as SITE_HELP
from compiler.cli.site_locate import locate_site
from compiler.compile import Compiled, compile_site, located
from compiler.contract.build_files import ALLOWLISTS, BINDINGS, DRIFT, MANIFEST, SUPPLY_MAP
from compiler.core import codes
from compiler.core.canonical import dumps
from compiler.core.gc_pause import gc_paused
from compiler.core.git import Revision, site_revision
from compiler.core.problems import Problem, Problems, Severity, UserError
from compiler.core.textstyle import Style
from compiler.emit.output import write_outputs
from compiler.emit.schema import site_file_schema


def parser() -> argparse.ArgumentParser:
    p = UsageParser(
        prog="xce-compile",
        description="Validate a site-config folder and compile the desired supply map.",
    )
    p.add_argument("site", nargs="?", type=Path, help=SITE_HELP)
    p.add_argument("--out", type=Path, default=Path("build"), help="output folder (default: build)")
    p.add_argument(
        "--check",
        action="store_true",
        help="validate only: compile and report the problems, write nothing (no --out folder; "
        "for a pre-commit hook)",
    )
    add_policies(p)
    add_format(p, FORMATS.names, "the problems")
    p.add_argument(
        "--schema", action="store_true", help="print the JSON Schema of a site-config file and exit"
    )
    return p


def serialize(compiled: Compiled, revision: Revision) -> tuple[dict[str, bytes], str]:
    """The output documents and the desired digest; the entries' JSON is built only once."""
    supply = replace(compiled.supply_map, revision=revision.commit, dirty=revision.dirty)
    doc = supply.to_json()
    documents = {SUPPLY_MAP: dumps(doc), BINDINGS: dumps(compiled.bindings.to_json()),
                 DRIFT: dumps(compiled.drift.to_json())}
    if compiled.policy is not None:
        documents[ALLOWLISTS] = compiled.policy.to_bytes()
    return documents, doc["digest"]


def _body(argv: list[str] | None) -> int:
    args = parser().parse_args(argv)
    if args.schema:
        sys.stdout.write(dumps(site_file_schema()).decode())
        return EXIT_OK
    args.site = locate_site(args.site)
    problems = Problems()
    compiled, files = compile_site(args.site, problems, args.policies)
    shown = located(problems, files)
    text = render(shown, args.format, Style.for_stream(sys.stdout))
    if not shown and args.format in ("text", "markdown"):
        text = ""  # a clean text run says so on its own; json and github always print
    if compiled is None or any(p.severity is Severity.ERROR for p in shown):
        if args.format != "text":  # the document asked for; the log reads as always
            sys.stdout.write(text)
        sys.stderr.write(_log_of_failure(shown, args.format))
        return EXIT_ERROR
    revision = site_revision(args.site)
    supply = compiled.supply_map
    documents, desired_digest = serialize(compiled, revision)
    if args.check:
        _report_success(args.format, text, compiled, revision, desired_digest, None)
        return EXIT_OK
    try:
        policies = compiled.policy.provenance(args.site) if compiled.policy else None
        manifest = write_outputs(
            args.out, documents, revision, supply.site, desired_digest, policies
        )
    except OSError as err:
        raise UserError(
            [
                Problem(
                    codes.CANNOT_WRITE,
                    f"cannot write the outputs to '{args.out}': {err.strerror or err}",
                    "give an --out folder that can be created and written",
                    subject=str(args.out),
                )
            ]
        ) from err
    _report_success(args.format, text, compiled, revision, manifest["desired_digest"],
                    args.out, manifest["outputs"])
    return EXIT_OK


def _log_of_failure(shown: Sequence[Problem], fmt: str) -> str:
    """What a failed compile writes to stderr: the problems as text, but for ``github``,
    whose annotations are already the log's lines (each problem would show twice), a count."""
    if fmt != "github":
        return render(shown, "text", Style.for_stream(sys.stderr))
    errors = sum(p.severity is Severity.ERROR for p in shown)
    codes = ", ".join(dict.fromkeys(f"{p.severity.value}[{p.code}]" for p in shown))
    return (f"xce-compile: the site does not compile: {errors} error(s), "
            f"{len(shown) - errors} warning(s) ({codes}), each shown above as an annotation\n")


def _shown(revision: Revision) -> str:
    """A revision as the reports show it: its commit, short, and whether files differ."""
    return (revision.commit or "no commit")[:12] + (" (dirty)" if revision.dirty else "")


def _report_success(fmt: str, problems: str, compiled: Compiled, revision: Revision,
                    digest: str, out: Path | None, outputs: Sequence[str] = ()) -> None:
    """What a valid site compiled to (``out`` None: ``--check``, nothing written): a line
    for a terminal, a short document for a pull request (markdown), the problems document
    for tools (json, github)."""
    supply = compiled.supply_map
    rev = _shown(revision)
    providers = len(compiled.bindings.names)
    if fmt == "text":
        sys.stderr.write(problems)
        verb, where = ("checked", "; nothing written") if out is None else ("compiled",
                                                                            f" → {out}/")
        sys.stdout.write(f"{verb} site {supply.site} at {rev}: {len(supply.entries)} entries, "
                         f"{providers} providers{where}\ndesired digest {digest}\n")
    elif fmt == "markdown":
        sys.stdout.write(_markdown_report(compiled, rev, digest, out, outputs)
                         + ("\n" + problems if problems else ""))
    else:
        sys.stdout.write(problems)


def _markdown_report(compiled: Compiled, rev: str, digest: str, out: Path | None,
                     outputs: Sequence[str]) -> str:
    supply = compiled.supply_map
    if out is None:
        return f"### ✅ Site {supply.site} is valid at `{rev}`\n"
    files = ", ".join(f"`{out / name}`" for name in (*outputs, MANIFEST))
    rows = [("revision", f"`{rev}`"), ("entries", f"{len(supply.entries):,}"),
            ("providers", str(len(compiled.bindings.names))),
            ("desired digest", f"`{digest}`"), ("outputs", files)]
    return "\n".join([f"### ✅ Compiled site {supply.site}", "", "| | |", "|---|---|",
                      *(f"| {k} | {v} |" for k, v in rows), ""])


def main(argv: list[str] | None = None) -> int:
    with gc_paused():
        return run_cli("xce-compile", lambda: _body(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
