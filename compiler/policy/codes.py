"""The policies' problem codes (XCE600–XCE699, docs/errors.md "Policies"), each named once.

As in ``compiler/core/codes.py``: the code is the stable part scripts match on, so it is written
only here; the hints depend on what was found and stay where the problem is made.
"""

from __future__ import annotations

# policy files
FILE_MISSING = "XCE600"
FILE_NOT_VERSION_1 = "XCE601"  # not a mapping, or another version
UNKNOWN_KEY = "XCE602"
MISSING_KEY = "XCE603"
BAD_VALUE = "XCE604"
BAD_NAME = "XCE605"
# the opcode catalog
OPCODE_TWICE = "XCE610"
OPCODE_ID_TWICE = "XCE611"
OPCODE_ID_OUT_OF_RANGE = "XCE612"  # also: two categories' ranges overlap
UNKNOWN_CATEGORY = "XCE613"
UNKNOWN_RISK = "XCE614"
OPCODE_NOT_IN_CATEGORY = "XCE615"
# selectors and roles
UNKNOWN_OPCODE = "XCE620"
GLOB_MATCHES_NOTHING = "XCE621"
SELECTOR_UNKNOWN_CLASS = "XCE622"  # category:X or risk:X
UNKNOWN_ROLE = "XCE623"
ROLE_TWICE = "XCE624"
# guardrails
GUARDRAIL_VIOLATED = "XCE630"
OPCODE_NOT_HELD = "XCE631"
UNUSED_OPCODE_GRANTED = "XCE632"
GUARDRAIL_TWICE = "XCE633"
GUARDRAIL_NOT_ONE_RULE = "XCE634"
# waivers
WAIVER_EXPIRED = "XCE640"
WAIVER_UNKNOWN_GUARDRAIL = "XCE641"  # or one that cannot be waived
WAIVER_TOO_LONG = "XCE643"
WAIVER_STALE = "XCE644"
WAIVER_EXPIRES_SOON = "XCE645"
WAIVER_TWICE = "XCE646"
# the site's allowlists
NO_PROXY_ROLE = "XCE650"
# xce-policy review / compile
NOT_A_REPOSITORY = "XCE660"
UNKNOWN_REVISION = "XCE661"
BAD_FOLDER = "XCE662"  # --site missing, or outside the repository
USAGE = "XCE670"
CANNOT_WRITE = "XCE671"
