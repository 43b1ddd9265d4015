"""The problem codes of ``xce-status`` (docs/errors.md, "Proxies": XCE865–XCE868), each named
once beside its default hint."""

from __future__ import annotations

from compiler.core.problems import Hints, UserError

USAGE = "XCE865"
NO_STORE = "XCE866"
WHICH_SITE = "XCE867"
BAD_CONFIG = "XCE868"

HINTS = Hints({
    USAGE: "see 'xce-status --help'",
    NO_STORE: "pass --state with the site's store (a file, sqlite:///PATH or "
    "postgresql://USER@HOST/DB), or set $XCE_STATE_URL; xce-status never creates one",
    WHICH_SITE: "pass --site-key with one of the sites the store holds",
    BAD_CONFIG: "apply the site again with this version of xce-gitops, so the store holds "
    "bindings it can read",
})


def error(code: str, message: str, subject: str, hint: str | None = None) -> UserError:
    """A problem of this table as the error that stops ``xce-status``."""
    return UserError([HINTS.problem(code, message, subject, hint)])
