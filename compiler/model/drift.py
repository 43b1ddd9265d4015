"""The ``drift:`` section: how ``xce-drift`` screens drift and whom it mails (docs/drift.md).

``ignore`` rules and ``waivers`` say which drift is accepted — by entry id glob, entry kind,
provider and field, always with a reason; a waiver also has an owner and an expiry date,
after which the drift is reported again. ``notify`` holds the SMTP server, the addresses,
the routing of drift by kind or provider, and the digest period. Like ``policy:``, the
section may be split across files (the lists add up); ``notify`` is written in one file.

The items are the contract's (``compiler.contract.drift``: what ``build/drift.json``
holds, which the reconciler reads back); this module holds the section of one file, and
what the compiler says of a mistake in it. The file is read item by item in
``compiler.model.document``, checked across files in ``compiler.checks.drift`` and
written in ``compiler.emit.drift``.
"""

from __future__ import annotations

from pydantic import Field

from compiler.contract.drift import DriftWaiver, IgnoreRule, Notify
from compiler.core import codes
from compiler.core.codes import (
    BAD_ADDRESS,
    BAD_DATE,
    BAD_GLOB,
    LOGIN_IN_CLEAR,
    MATCHES_EVERYTHING,
    WAIVER_EXPIRED,
    WAIVER_EXPIRES_SOON,
)
from compiler.core.problems import Hints
from compiler.core.secrets import REFERENCE_FORMS
from compiler.core.types import Strict

# Unknown keys, missing keys and wrong types are the language's own (XCE101, XCE105, XCE102).
HINTS = Hints({
    BAD_GLOB: "write an fnmatch glob: text with '*', '?' and '[...]' sets, e.g. "
    "volume-dir/scratch/*",
    BAD_DATE: "write the last day it holds as YYYY-MM-DD, e.g. 2027-06-30",
    WAIVER_EXPIRES_SOON: "renew it after review (a later 'expires'), or fix the drift it waives",
    WAIVER_EXPIRED: "fix the drift, renew the waiver after review, or remove it",
    MATCHES_EVERYTHING: "name what it is about: 'entries', 'kind', 'provider' or 'field'",
    BAD_ADDRESS: "write name@example.org, or a name and the address: Drift <drift@example.org>",
    LOGIN_IN_CLEAR: "use tls: starttls or implicit, or a server that needs no login",
})
# pydantic error type (raised by the contract's value types) -> (code, hint), for
# compiler/model/errors.py
OWN_MESSAGES = {
    "drift_glob": (BAD_GLOB, HINTS[BAD_GLOB]),
    "drift_date": (BAD_DATE, HINTS[BAD_DATE]),
    "drift_address": (BAD_ADDRESS, HINTS[BAD_ADDRESS]),
    "drift_secret": (codes.LITERAL_SECRET, f"write a reference: {REFERENCE_FORMS}"),
    "drift_everything": (MATCHES_EVERYTHING, HINTS[MATCHES_EVERYTHING]),
    "drift_clear_login": (LOGIN_IN_CLEAR, HINTS[LOGIN_IN_CLEAR]),
}


class DriftSection(Strict):
    """The ``drift:`` section of one file."""

    ignore: list[IgnoreRule] | None = Field(
        None, description="drift accepted for good: counted, never mailed",
        examples=[[{"entries": "volume-dir/scratch/*", "reason": "the purge job owns these"}]],
    )
    waivers: list[DriftWaiver] | None = Field(
        None, description="drift accepted until a date",
        examples=[[{"entries": "host/cn0042", "owner": "alice@example.org",
                    "reason": "board replacement", "expires": "2027-06-30"}]],
    )
    notify: Notify | None = Field(
        None, description="how drift is mailed; in one file only",
        examples=[{"smtp": {"host": "smtp.example.org"}, "from": "xce-drift@example.org",
                   "to": ["hpc-admins@example.org"]}],
    )
