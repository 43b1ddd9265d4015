"""The controller map's problem codes (XCE720–XCE724, XCE730–XCE739, docs/errors.md
"Controller map"), each named once, with their hints.

``xce-map`` reports them when a host or job event is refused, or the map file cannot be
used; the provider itself answers with the protocol's error codes, reported in the live
map's range.
"""

from __future__ import annotations

from compiler.core.problems import Hints
from reconciler.providers.controller_map.reporter import Cause

JOB_REFUSED = "XCE720"
UNKNOWN_JOB = "XCE721"
NOT_A_JOB = "XCE722"
JOB_USER = "XCE723"
MAP_UNUSABLE = "XCE730"
MAP_BUSY = "XCE731"
NOT_A_HOSTLIST = "XCE732"
EVENT_REFUSED = "XCE733"
UNKNOWN_HOST = "XCE734"
BAD_TIME = "XCE735"
UNKNOWN_KIND = "XCE736"
USAGE = "XCE737"

NOTHING = "nothing in this batch was recorded"
HINTS = Hints({
    JOB_REFUSED: NOTHING,
    UNKNOWN_JOB: NOTHING,
    JOB_USER: NOTHING,
    NOT_A_JOB: "a job id is the scheduler's job number, decimal digits (1234); "
               "an array element's state is its job's: write 1234 for 1234[7]",
    MAP_BUSY: "try again when the other writer is done",
    EVENT_REFUSED: NOTHING,
    UNKNOWN_HOST: f"report join first to add it; {NOTHING}",
    BAD_TIME: "write it like 2026-11-29T09:40:00Z",
})
# the code of each cause a batch of host or job events is refused for
HOST_CODES = {Cause.UNKNOWN: UNKNOWN_HOST, Cause.STATE: EVENT_REFUSED}
JOB_CODES = {Cause.UNKNOWN: UNKNOWN_JOB, Cause.STATE: JOB_REFUSED, Cause.USER: JOB_USER}
