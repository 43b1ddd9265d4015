"""Options several commands share, defined once: one name, one meaning and one help text
each, a command adding only what is its own as a short suffix, so ``--state`` or
``--format`` reads the same in every command's ``--help``."""

from __future__ import annotations

import argparse
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path

from compiler.contract.build_files import BINDINGS, BUILD_DIR, STATE_FILE, SUPPLY_MAP, WORKDIR
from compiler.core.times import TimeError, parse_instant, utc_instant
from compiler.core.units import UnitError, parse_duration

ENV_WORKDIR = "XCE_WORKDIR"
# where the state store is unless --state names it (reconciler.state: ENV_URL, open_store)
STATE_DEFAULT = f"$XCE_STATE_URL, else <workdir>/{STATE_FILE}"
# who reads each --format (the names of a command's ``Formats``)
_READERS = {"text": "text for a terminal", "json": "json for tools",
            "markdown": "markdown for a pull-request or issue comment",
            "github": "github for annotations on the site-config lines",
            "html": "html for a browser or a mail"}


def add_workdir(p: argparse.ArgumentParser, first: str = "",
                last: str = f"<site>/{WORKDIR}") -> None:
    """``--workdir``, defaulting to ``$XCE_WORKDIR``: a CI job's checkout is fresh (and
    actions/checkout cleans ignored files), so the embedded providers' memory must live in a
    folder outside it that every job of the site uses. Given this way, it counts as given.
    ``first``: a default the command tries before ``last`` (``<site>/.xce``; a proxy, which
    has no site, says its own)."""
    env = os.environ.get(ENV_WORKDIR)
    p.add_argument("--workdir", type=Path, default=Path(env) if env else None,
                   help=f"the reconciler's work folder, holding the embedded providers' state "
                   f"(default: ${ENV_WORKDIR}, else {first}{last})")


def add_state(p: argparse.ArgumentParser, role: str = "", default: str = STATE_DEFAULT) -> None:
    """``--state``: the state store (reconciler.state.open_store); ``role`` says what the
    command keeps in it or asks it, ``default`` where it is looked for when not named."""
    p.add_argument("--state", metavar="PATH|URL",
                   help=f"the state store{role}: a file, sqlite:///PATH or "
                   f"postgresql://USER@HOST/DB (default: {default})")


def add_desired(p: argparse.ArgumentParser) -> None:
    """``--desired``: a map xce-compile wrote, read instead of compiling the site."""
    p.add_argument("--desired", type=Path, metavar="FILE",
                   help=f"a compiled supply map ({BUILD_DIR / SUPPLY_MAP}, {BINDINGS} beside "
                   "it) instead of compiling the site")


def add_policies(p: argparse.ArgumentParser) -> None:
    """``--policies``: the policy folder a site compiles with (docs/policies.md)."""
    p.add_argument("--policies", type=Path, metavar="DIR",
                   help="policy folder (opcodes.yaml, roles.yaml, guardrails.yaml) to compile "
                   "with (default: policies/ in the site folder, else at the top of its git "
                   "repository, else the policies bundled with xce-gitops)")


def add_live(p: argparse.ArgumentParser) -> None:
    """``--live``: a live-map snapshot, read instead of asking the providers."""
    p.add_argument("--live", type=Path, metavar="FILE",
                   help="compare with a live-map snapshot file instead of asking the providers")


def add_format(p: argparse.ArgumentParser, formats: Sequence[str], what: str,
               more: str = "") -> None:
    """``--format``: one of ``formats`` (the command's ``Formats.names``), text by default;
    ``what`` is what it prints, ``more`` a note of the command's own."""
    readers = ", ".join(_READERS[name] for name in formats)
    p.add_argument("--format", choices=tuple(formats), default="text",
                   help=f"how {what} is printed: {readers}{more} (default: text)")


def add_as_of(p: argparse.ArgumentParser, what: str, more: str = "") -> None:
    """``--as-of WHEN``: a time to act as if it were (``instant``); ``what`` says what is
    done then, ``more`` a note of the command's own."""
    p.add_argument("--as-of", metavar="WHEN", type=instant,
                   help=f"{what} as if it were WHEN (ISO 8601, UTC without a zone, or "
                   f"+DURATION from now, e.g. +15d){more}")


def instant(text: str) -> float:
    """An ISO 8601 time (UTC unless it names a zone) or ``+DURATION`` from now, as seconds,
    one that a plan or report can print (``utc_instant``); else argparse's usage error."""
    try:
        if text.startswith("+"):
            seconds = time.time() + parse_duration(text[1:])
        else:
            seconds = parse_instant(text).timestamp()
    except (UnitError, ValueError) as err:
        raise argparse.ArgumentTypeError(f"{text!r} is neither an ISO 8601 time nor "
                                         f"+DURATION ({err})") from None
    except OverflowError:  # a zone that moves it past the year 1 or 9999
        seconds = math.inf
    try:
        return utc_instant(seconds)
    except TimeError as err:
        raise argparse.ArgumentTypeError(f"{text!r} is no time to plan for: {err}") from None
