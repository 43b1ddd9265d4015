"""The problem codes of providers and the live map (docs/errors.md, "Providers and live map"),
each named once beside its default hint."""

from __future__ import annotations

from compiler.core.problems import Hints

BAD_BINDING = "XCE700"
UNAVAILABLE = "XCE701"
TIMED_OUT = "XCE702"
GARBAGE = "XCE703"
REFUSED = "XCE704"
PARTIAL = "XCE705"
DUPLICATE = "XCE706"
SNAPSHOT_UNREADABLE = "XCE707"
SNAPSHOT_NOT_JSON = "XCE708"
SNAPSHOT_SHAPE = "XCE709"
NOT_BOUND = "XCE710"
BAD_BINDINGS = "XCE711"
SNAPSHOT_NEWER = "XCE712"
SNAPSHOT_UNREPORTED = "XCE713"  # made by the pipeline: xce-plan --live
ROLLED_BACK = "XCE714"
CANNOT_ACCEPT = "XCE715"
SHRANK = "XCE716"
CANNOT_ACCEPT_SHRINK = "XCE717"
SNAPSHOT_REPEATS = "XCE718"
SNAPSHOT_OTHER_SITE = "XCE719"

HINTS = Hints({
    BAD_BINDING: "fix the provider's binding (kind, command, timeout, params, secrets)",
    UNAVAILABLE: "check that the provider's proxy runs and its command is installed; "
    "until it answers, its entries are unknown and nothing is planned for them",
    TIMED_OUT: "the provider did not answer within its binding's timeout; "
    "until it answers, its entries are unknown and nothing is planned for them",
    GARBAGE: "the provider's reply does not follow the protocol (docs/providers.md); "
    "until it does, its entries are unknown and nothing is planned for them",
    REFUSED: "fix the cause the provider names; until then its entries are unknown",
    PARTIAL: "see why the provider could not see everything it holds; "
    "until it reports a complete inventory, its entries are unknown",
    DUPLICATE: "each entry must be held by exactly one provider: check the bindings; until "
    "then the entry is unknown and nothing is planned for it",
    ROLLED_BACK: "a restored backup or a stale standby answers for the provider: point the "
    "binding at the current one; if the provider was replaced on purpose, accept its "
    "generation with xce-plan --accept-generation NAME",
    CANNOT_ACCEPT: "accept a generation from a live gather in which the provider answers, with "
    "the state store it is recorded in (--state)",
    SHRANK: "find out where the entries went (a lost or restored database, a garbled file, a "
    "shard that did not answer); until then its entries are unknown and nothing is planned "
    "for them. If the loss is real, accept it: xce-plan --accept-shrink NAME",
    CANNOT_ACCEPT_SHRINK: "accept a shrink from a live gather in which the provider answers "
    "completely (not a --live snapshot)",
    NOT_BOUND: "check the provider name",
    BAD_BINDINGS: "pass the bindings.json the compiler wrote",
    SNAPSHOT_UNREADABLE: "pass the path of a live map JSON file",
    SNAPSHOT_REPEATS: "each key may appear once in a JSON object (a reader would keep one of "
    "the values silently): fix the exporter and export the live map again",
    SNAPSHOT_OTHER_SITE: "export the live map of this site (its proxies, with this site's owner "
    "tag), or plan the site the snapshot belongs to",
    SNAPSHOT_NEWER: "export it with the xce-gitops version that plans it, or upgrade",
    SNAPSHOT_UNREPORTED: "export the snapshot again once the provider answers; until then its "
    "entries are unknown and nothing is planned for them",
})
