"""``xce-policy``: compile the allowlists, or review what a policy change gives and takes.

``compile`` writes build/allowlists.json from the working tree. ``review`` compiles two
git revisions from the object store and exits 0 (no change), 2 (changes) or 3 (an
escalation: CI should ask for a second approval); 1 is an error, as in every xce command.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from collections.abc import Sequence
from pathlib import Path

import git

from compiler.cli.options import add_format
from compiler.cli.problem_render import FORMATS as PROBLEM_FORMATS
from compiler.cli.problem_render import render as render_problems
from compiler.cli.runner import EXIT_ERROR, EXIT_OK, UsageParser, run_cli
from compiler.cli.site_locate import Holds, locate_site, say_found, site_at_revision
from compiler.core.file_io import write_atomic
from compiler.core.git import blob_at, work_tree_of
from compiler.core.problems import Problem, Problems, UserError
from compiler.core.textstyle import Style
from compiler.policy import codes
from compiler.policy.allowlists import FILENAME
from compiler.policy.compile import compile_policies, locate_policies
from compiler.policy.gitsource import RevisionBuild, compile_at, inside, open_repo, resolve_commit
from compiler.policy.review import diff
from compiler.policy.review_render import FORMATS as REVIEW_FORMATS
from compiler.policy.review_render import render as render_review
from compiler.policy.site import load_site_policy_files
from compiler.source.yaml_source import Locator, display_path

PROG = "xce-policy"
TOP = "the repository's top folder"  # where the site rule starts: folders are relative to it
HINT = "run it in the site's repository, or pass --site with the site folder inside it"


class _Parser(UsageParser):
    usage_code = codes.USAGE


def _parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument("--repo", type=Path, help="the git repository (default: the one of cwd)")
    common.add_argument(
        "--policies",
        metavar="DIR",
        help="policy folder inside the repo (default: policies/ in the site folder, else at the "
        "top of the repo, else the policies bundled with xce-gitops)",
    )
    common.add_argument("--site", help="site-config folder inside the repo (default: the top of "
                        "the repo when it holds site.yaml, else its site-config/; for review, at "
                        "each revision)")
    p = _Parser(prog=PROG, description=__doc__.split("\n\n")[0] if __doc__ else None)
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    c = sub.add_parser("compile", parents=[common], help="write build/allowlists.json")
    c.add_argument("--out", default="build", help="output folder (default: build)")
    add_format(c, PROBLEM_FORMATS.names, "the problems")
    r = sub.add_parser("review", parents=[common], help="what each role gains and loses")
    r.add_argument("--base", required=True, help="the revision to compare against")
    r.add_argument("--head", default="HEAD", help="the revision under review (default: HEAD)")
    add_format(r, REVIEW_FORMATS.names, "the review")
    return p


def _root(repo: Path | None) -> Path:
    """Where relative folders start: --repo, else the work tree containing cwd, else cwd."""
    if repo is not None:
        return repo
    return work_tree_of(Path.cwd()) or Path.cwd()


def _report(problems: list[Problem], fmt: str) -> None:
    """Problems as text on stderr; a run that asked for a document gets it on stdout."""
    if problems:
        sys.stderr.write(render_problems(problems, "text", Style.for_stream(sys.stderr)))
    if fmt != "text":
        sys.stdout.write(render_problems(problems, fmt))


def _compile(args: argparse.Namespace) -> int:
    root = _root(args.repo)
    site_dir = root / args.site if args.site is not None else locate_site(
        None, root, where=TOP, hint=HINT)
    problems = Problems()
    if not site_dir.is_dir():
        problems.error(
            codes.BAD_FOLDER,
            f"site-config folder not found: {site_dir}",
            "pass --site with the folder of the site's YAML files",
        )
    site = load_site_policy_files(site_dir, problems) if site_dir.is_dir() else []
    origin = locate_policies(site_dir, None if args.policies is None else root / args.policies)
    build = compile_policies(origin, site, problems, datetime.date.today())
    located = Locator([*build.sources, *site]).locate_all(problems)
    _report(located, args.format)
    if problems.has_errors:
        return EXIT_ERROR
    out = root / args.out / FILENAME
    try:
        write_atomic(out, build.to_bytes())
    except OSError as err:
        message = f"cannot write {out}: {err.strerror}"
        raise UserError([Problem(codes.CANNOT_WRITE, message)]) from None
    done = sys.stdout if args.format == "text" else sys.stderr  # stdout holds the document
    done.write(f"wrote {display_path(out)} ({build.digest}) from {build.origin.describe()}\n")
    return EXIT_OK


def _label(build: RevisionBuild) -> str:
    short = build.commit[:12]
    return short if build.commit.startswith(build.rev) else f"{build.rev} ({short})"


def _in_tree(commit: git.Commit) -> Holds:
    """``holds`` for the files of a commit's tree, as the site rule asks."""
    return lambda path: blob_at(commit, path) is not None


def _sites(repo: git.Repo, args: argparse.Namespace) -> tuple[str, str]:
    """The site folder at the base and at the head, by the rule every command follows (the
    one given, else the top of the repository, else site-config/, at each revision): a
    revision without a site is an error, never a review that finds no change."""
    given = None if args.site is None else inside(repo, args.site)
    found = tuple(site_at_revision(_in_tree(resolve_commit(repo, rev)), given, rev)
                  for rev in (args.base, args.head))
    if given is None and found[0] == found[1]:
        say_found(found[0], f"{TOP} at {args.base} and {args.head}")
    elif given is None:
        for folder, rev in zip(found, (args.base, args.head), strict=True):
            say_found(folder, f"{TOP} at {rev}")
    return found[0], found[1]


def _review(args: argparse.Namespace) -> int:
    repo = open_repo(args.repo)
    today = datetime.date.today()
    base_site, head_site = _sites(repo, args)
    base = compile_at(repo, args.base, args.policies, base_site, today)
    head = compile_at(repo, args.head, args.policies, head_site, today)
    failed = head.problems.has_errors  # then the problems are the document asked for
    _report(Locator(texts=head.texts).locate_all(head.problems), args.format if failed else "text")
    if failed:
        return EXIT_ERROR
    if base.policies != head.policies:
        sys.stderr.write(
            f"note: the policies are {base.policies} at {_label(base)} "
            f"and {head.policies} at {_label(head)}\n"
        )
    if base.problems.has_errors:
        sys.stderr.write(
            f"note: {len(base.problems.errors)} problem(s) at the base revision "
            f"{_label(base)}; compared with what compiled there\n"
        )
    review = diff(base.document, head.document, _label(base), _label(head))
    sys.stdout.write(render_review(review, args.format, Style.for_stream(sys.stdout)))
    return review.exit_code


def main(argv: Sequence[str] | None = None) -> int:
    def body() -> int:
        args = _parser().parse_args(argv)
        return _compile(args) if args.command == "compile" else _review(args)

    return run_cli(PROG, body)


if __name__ == "__main__":
    sys.exit(main())
