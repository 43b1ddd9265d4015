"""The apply's problem codes (XCE820–XCE849, docs/errors.md "Apply"), in one place.

Codes name what the user must act on: a refused plan, a lock, why an action was skipped.
Keeping them together keeps docs/errors.md and the code in step.
"""

from __future__ import annotations

from compiler.core.problems import Hints

# refused before anything runs
USAGE = "XCE820"
PLAN_FOR_OTHER_CONFIG = "XCE821"
STALE_ENTRIES = "XCE822"
CANNOT_VERIFY = "XCE823"
PLAN_BLOCKED = "XCE824"
PLAN_MALFORMED = "XCE825"
# notices
LOCK_TAKEN_OVER = "XCE826"
RESUMED = "XCE827"
RECONNECTED = "XCE828"
# why an action did not run (per action in the report)
SKIP_DESTROY = "XCE830"
SKIP_PROTECTED = "XCE831"
SKIP_DEPENDENCY = "XCE832"
SKIP_STOPPED = "XCE833"
SKIP_INTERRUPTED = "XCE834"
# why an action failed, or the apply stopped
ACTION_FAILED = "XCE835"
FENCED = "XCE836"
LOCK_LOST = "XCE837"
NO_PROVIDER = "XCE838"
# xce-lock
LOCK_NOT_FOUND = "XCE840"
LOCK_IS_LIVE = "XCE841"

HINTS = Hints({
    SKIP_DESTROY: "destructive actions run only with xce-apply --allow-destroy, or from a "
    "plan saved with xce-plan --destroy",
    SKIP_PROTECTED: "protected entries are never destroyed: take the entry off "
    "site.protected first if it really must go",
    SKIP_DEPENDENCY: "fix the failed action it depends on and run xce-apply again",
    SKIP_STOPPED: "run xce-apply again: finished operations are journaled and skipped",
    SKIP_INTERRUPTED: "nothing to do: the next plan shows whether the entry still differs",
    ACTION_FAILED: "fix the cause the provider names and run xce-apply again; done actions "
    "are not repeated",
    FENCED: "another apply took over (a newer epoch); let it finish, then plan again",
    LOCK_LOST: "the lock lease expired or was released by force; run xce-apply again, "
    "which takes the lock and resumes",
    NO_PROVIDER: "bind the provider in site-config (providers.yaml) and compile again",
})
problem = HINTS.problem
