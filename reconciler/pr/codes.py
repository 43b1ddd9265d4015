"""xce-pr's problem codes (XCE890–XCE899, docs/errors.md "Pull-request comments").

Each names what the site admin must change: the CI's settings, the token's permissions, the
pull request asked for, or the network. The few with one usual hint have it here; the
others' hints depend on the forge and its answer (``github.py``, ``gitlab.py``, ``ci.py``).
"""

from __future__ import annotations

from compiler.core.problems import Hints

USAGE = "XCE890"
CI_SETTINGS = "XCE891"
NO_PULL = "XCE892"
INPUT = "XCE893"
DENIED = "XCE894"
NOT_FOUND = "XCE895"
REFUSED = "XCE896"
UNREACHABLE = "XCE897"
BAD_ANSWER = "XCE898"
CUT = "XCE899"

HINTS = Hints({
    INPUT: "check the file name; the comment is made from UTF-8 text files (- for stdin)",
    BAD_ANSWER: "check that the API URL points at the forge's REST API; if the forge is "
    "failing, run the job again later",
    CUT: "the full text is in the files the job posted; keep them as the job's artifact",
})
