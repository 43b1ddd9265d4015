"""Which site a command works on: one rule for every command, on disk and at a git revision.

The folder given; else the current folder when it holds a site (``xce-init`` makes the
repository itself the site); else its ``site-config/`` when that holds one (a repository
that keeps its site in a sub-folder, like this product's example). A folder holds a site
when it holds ``site.yaml`` (or ``site.yml``), the file ``xce-init`` writes the ``site:``
section in. A command that finds none refuses: compiling an empty folder would review
nothing, and a map or state store made beside a site that does not exist records events
where nothing reads them (issue 19 §8). ``xce-policy`` applies the same rule from the top
of the repository, the place its folders are relative to.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from compiler.contract.build_files import STATE_FILE, WORKDIR
from compiler.core import codes
from compiler.core.problems import Problem, UserError
from compiler.source.yaml_source import YAML_SUFFIXES

SITE_FILES = tuple(f"site{suffix}" for suffix in YAML_SUFFIXES)
HERE = "."
SUB_FOLDER = "site-config"
CANDIDATES = (HERE, SUB_FOLDER)  # in this order: the first that holds a site is the site
FOUND_HELP = "the current folder when it holds site.yaml, else its site-config/"
HELP = f"site-config folder (default: {FOUND_HELP})"
# holds(path): the file at ``path`` (relative to where the rule starts) exists
Holds = Callable[[str], bool]


def _join(folder: str, name: str) -> str:
    return name if folder == HERE else f"{folder}/{name}"


def holds_site(holds: Holds, folder: str = HERE) -> bool:
    """``folder`` holds a site: its ``site.yaml`` (or ``.yml``) is there."""
    return any(holds(_join(folder, name)) for name in SITE_FILES)


def find_site(holds: Holds) -> str | None:
    """The rule without a folder given: ``.`` or ``site-config``, whichever holds a site
    first; None when neither does."""
    return next((folder for folder in CANDIDATES if holds_site(holds, folder)), None)


def on_disk(start: Path) -> Holds:
    """``holds`` for the folder ``start`` on disk."""
    return lambda path: (start / path).is_file()


def shown(folder: str) -> str:
    """A found folder as the note and messages name it: ``./``, ``site-config/``."""
    return f"{folder}/"


def _looked(start: str) -> str:
    names = " or ".join(SITE_FILES)
    return f"neither {start} nor its {SUB_FOLDER}/ holds {names}"


def say_found(folder: str, where: str) -> None:
    """The one line that says which site a command found (on stderr: stdout may be a
    document); never said for a folder given."""
    sys.stderr.write(f"site: {shown(folder)} (found in {where})\n")


def locate_site(given: Path | None, start: Path | None = None, *,
                where: str = "the current folder", hint: str = "") -> Path:
    """The folder ``given``, else the one the rule finds in ``start`` (default: the current
    folder; ``where`` names it), said in one line on stderr; none is XCE030. The path
    returned is relative to ``start`` when ``start`` is relative (``.``, ``site-config``)."""
    if given is not None:
        return given
    base = Path(HERE) if start is None else start
    found = find_site(on_disk(base))
    if found is None:
        raise UserError([Problem(
            codes.NO_SITE_FOUND, f"no site found: {_looked(where)}", hint or "run the "
            "command in the site's folder (the one holding site.yaml), or give the site folder",
            subject=str(base.absolute()))])
    say_found(found, where)
    return base / found if start is not None else Path(found)


def require_site(given: Path | None, *, hint: str) -> Path:
    """``locate_site``, for a command that would create files beside the site (the map, the
    state store): a folder given must hold a site too, else XCE031 and nothing is made."""
    if given is not None and not holds_site(on_disk(given)):
        what = "does not exist" if not given.exists() else (
            "is not a folder" if not given.is_dir() else f"holds no {' or '.join(SITE_FILES)}")
        raise UserError([Problem(codes.NOT_A_SITE, f"the site folder {given} {what}", hint,
                                 subject=str(given))])
    return locate_site(given, hint=hint)


def site_at_revision(holds: Holds, given: str | None, label: str) -> str:
    """The site folder (relative to the top of the repository) at a revision whose files
    ``holds`` answers for: the folder given, else the rule's; a revision where it holds no
    site is XCE032, never a comparison with nothing."""
    found = given if given is not None and holds_site(holds, given) else (
        find_site(holds) if given is None else None)
    if found is None:
        looked = (f"{shown(given)} holds no {' or '.join(SITE_FILES)}" if given is not None
                  else _looked("the top of the repository"))
        raise UserError([Problem(
            codes.NO_SITE_AT_REVISION, f"no site at {label}: {looked} there",
            "check the revision, or pass --site with the site folder relative to the top "
            "of the repository", subject=label)])
    return found


def store_file(workdir: Path | None, named: bool, site: Path | None, *, hint: str) -> Path:
    """``<workdir>/state.sqlite``, for a command that only reads or frees what the store
    holds (xce-lock, xce-status): the site, the workdir's default place, is looked for only
    when nothing names the store (``named``: --state or $XCE_STATE_URL), and a site that is
    not there is refused, as a store made for it would hold nothing of the site."""
    if workdir is not None:
        return workdir / STATE_FILE
    if named:
        return Path(WORKDIR, STATE_FILE)  # not opened: the store is named
    return require_site(site, hint=hint) / WORKDIR / STATE_FILE
