"""``xce-compile``: site-config folder → build/supply-map.json, bindings.json, manifest.json."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from compiler.canonical import dumps
from compiler.cli_runner import EXIT_ERROR, EXIT_OK, run_cli
from compiler.compile import compile_site, located
from compiler.output import write_outputs
from compiler.problem_render import render
from compiler.problems import Problems, Severity
from compiler.revision import site_revision
from compiler.schema_export import site_file_schema
from compiler.textstyle import Style

FORMATS = ("text", "json", "github", "markdown")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="xce-compile",
        description="Validate a site-config folder and compile the desired supply map.",
    )
    p.add_argument(
        "site",
        nargs="?",
        default="site-config",
        type=Path,
        help="site-config folder (default: site-config)",
    )
    p.add_argument("--out", type=Path, default=Path("build"), help="output folder (default: build)")
    p.add_argument("--format", choices=FORMATS, default="text", help="how to print problems")
    p.add_argument(
        "--schema", action="store_true", help="print the JSON Schema of a site-config file and exit"
    )
    return p


def _body(argv: list[str] | None) -> int:
    args = parser().parse_args(argv)
    if args.schema:
        sys.stdout.write(dumps(site_file_schema()).decode())
        return EXIT_OK
    problems = Problems()
    compiled, files = compile_site(args.site, problems)
    shown = located(problems, files)
    text = render(shown, args.format, Style.for_stream(sys.stdout)) if shown else ""
    if compiled is None or any(p.severity is Severity.ERROR for p in shown):
        sys.stdout.write(text) if args.format != "text" else sys.stderr.write(text)
        return EXIT_ERROR
    revision = site_revision(args.site)
    supply = compiled.supply_map
    supply = type(supply)(
        entries=supply.entries,
        site=supply.site,
        owner=supply.owner,
        revision=revision.commit,
        dirty=revision.dirty,
        settings=supply.settings,
    )
    documents = {
        "supply-map.json": supply.dumps(),
        "bindings.json": dumps(compiled.bindings),
    }
    manifest = write_outputs(args.out, documents, revision, supply.site, supply.content_digest())
    if args.format == "text":
        sys.stderr.write(text)
        rev = (revision.commit or "no commit")[:12] + (" (dirty)" if revision.dirty else "")
        sys.stdout.write(
            f"compiled site {supply.site} at {rev}: {len(supply.entries)} entries, "
            f"{len(compiled.bindings['providers'])} providers → {args.out}/\n"
            f"desired digest {manifest['desired_digest']}\n"
        )
    else:
        sys.stdout.write(text)
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    return run_cli("xce-compile", lambda: _body(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
