"""The relay's problem codes (docs/errors.md, "Apply": XCE842–XCE843), each named once
beside its default hint: what a plan says when proxies cannot follow the config it plans."""

from __future__ import annotations

from compiler.core.problems import Hints

NO_APPLIED_CONFIG = "XCE842"  # proxied providers, but no applied config for the proxies
OLDER_CONFIG = "XCE843"  # the proxies follow an applied config other than this one

HINTS = Hints({
    NO_APPLIED_CONFIG: "run xce-apply once (with nothing to change it records the config "
    "alone), then start xce-proxy on each proxy's host (docs/proxies.md)",
    OLDER_CONFIG: "apply this config (xce-apply) for the proxies to follow it; until then "
    "they serve under the one applied last",
})
