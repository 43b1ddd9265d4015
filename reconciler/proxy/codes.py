"""The problem codes of ``xce-proxy`` (docs/errors.md, "Proxies"), each named once beside its
default hint."""

from __future__ import annotations

from compiler.core.problems import Hints, UserError

USAGE = "XCE860"
NOT_IN_CONFIG = "XCE861"
WHICH_SITE = "XCE862"
BAD_CONFIG = "XCE863"
METRICS_ADDRESS = "XCE864"

HINTS = Hints({
    USAGE: "see 'xce-proxy --help'",
    NOT_IN_CONFIG: "add the proxy to proxies.yaml (or run the one site-config names) and "
    "apply the site, so the store's applied configuration names it; a proxy serves only "
    "what the last apply recorded",
    WHICH_SITE: "pass --site with one of the sites the store holds",
    BAD_CONFIG: "apply the site again with this version of xce-gitops, so the store holds "
    "bindings it can read",
    METRICS_ADDRESS: "give --metrics HOST:PORT with a port free on this host, e.g. "
    "127.0.0.1:9464",
})


def error(code: str, message: str, subject: str, hint: str | None = None) -> UserError:
    """A problem of this table as the error that stops ``xce-proxy``."""
    return UserError([HINTS.problem(code, message, subject, hint)])
