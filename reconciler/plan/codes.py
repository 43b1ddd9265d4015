"""The plan's problem codes (XCE750–XCE779, docs/errors.md "Planner"; XCE740–XCE749, "Config
diff"), in one place.

The planner's guards, settings and targets and the plan file report these; the table is
under ``plan/`` because the plan file must not import the planner. Each code is named once
here, with its default hint where it has one.
"""

from __future__ import annotations

from compiler.core.problems import Hints

# the planner: guards (XCE750, 751, 753 and 754 become warnings with --force)
TOO_MANY_CHANGES = "XCE750"
REMOVES_TOO_MUCH = "XCE751"
PROTECTED = "XCE752"
INVENTORY_EMPTY = "XCE753"
INVENTORY_SHRANK = "XCE754"
GROWTH_INTENDED = "XCE758"  # XCE754's case when the config's growth explains the creates
GROWTH_NOT_ACCEPTED = "XCE759"  # an --accept-growth that accepts nothing, or no longer does
# the planner: settings and --target
BAD_SETTING = "XCE755"
TARGET_MATCHES_NOTHING = "XCE756"
# the planner: a desired entry found untagged and different (reconciler/planner/found.py)
FOUND_NOT_MADE = "XCE757"
# the plan file
PLAN_UNREADABLE = "XCE760"
PLAN_CORRUPT = "XCE761"
NOT_A_PLAN = "XCE762"
PLAN_TOO_NEW = "XCE763"
PLAN_MALFORMED = "XCE764"
PLAN_UNWRITABLE = "XCE765"
# a saved plan applied elsewhere than it was made (reconciler/plan/origin.py)
SITE_NOT_HERE = "XCE766"
OTHER_WORKDIR = "XCE767"
OTHER_STORE = "XCE768"
PLAN_TOO_OLD = "XCE769"
# reviewed plans: xce-plan --record, xce-apply --reviewed (reconciler/review/reviewed.py)
UNREVIEWED = "XCE770"
UNREVIEWED_APPLIED = "XCE771"
NOT_RECORDED = "XCE772"
# a saved plan checked before it is applied (reconciler/plan/signature.py,
# reconciler/apply/conformance.py)
PLAN_UNSIGNED = "XCE773"
NOT_IN_CONFIG = "XCE774"
DESTROY_NOT_GIVEN = "XCE775"
# the planner: settings.discovery as a mapping (reconciler/planner/discovery_policy.py)
DISCOVERY_GROUP_MISSING = "XCE725"  # settings.discovery.group not in the desired map
DISCOVERY_BAD_PATTERN = "XCE726"  # a settings.discovery.names pattern that cannot match
# the config diff: xce-plan --base REV (reconciler/review/config_base.py)
BASE_NOT_IN_GIT = "XCE740"
BASE_NOT_FOUND = "XCE741"

FORCE = "re-run with --force if this is intended"
_REMAKE = "make the plan again with xce-plan --out FILE"

HINTS = Hints({
    TOO_MANY_CHANGES: f"split the change, raise site.safety.max_changes, or {FORCE}",
    PROTECTED: "protected entries are never removed: take it off site.protected first",
    INVENTORY_EMPTY: "check that the provider answers with its real inventory; if it is "
    f"new, {FORCE}",
    INVENTORY_SHRANK: "check the provider's inventory; if the config added those entries, "
    "plan with --base REV so the growth is told from a loss; raise "
    f"site.safety.max_create_fraction, or {FORCE}",
    GROWTH_NOT_ACCEPTED: "drop --accept-growth for that provider, or plan with --base REV "
    "against the revision the change is made on",
    BAD_SETTING: "fix the value in site-config `site:` (see docs/plan.md, Settings) and "
    "compile again",
    TARGET_MATCHES_NOTHING: "check the id (e.g. host/cn0001, volume-dir/shared/*) or drop the "
    "target",
    PLAN_UNREADABLE: "check the path (the plan is saved by xce-plan --out FILE)",
    PLAN_CORRUPT: _REMAKE,
    NOT_A_PLAN: "pass the file that xce-plan --out wrote",
    PLAN_TOO_NEW: "apply it with the xce-gitops version that made it, or upgrade",
    PLAN_MALFORMED: _REMAKE,
    PLAN_UNWRITABLE: "check the directory exists and is writable",
    SITE_NOT_HERE: "run xce-apply in the folder the plan was made in (or the same place of "
    "another checkout of the site's repository), or pass --site DIR / --desired FILE",
    PLAN_TOO_OLD: "make the plan again with this xce-gitops: xce-plan --out FILE",
    UNREVIEWED: "open a pull request so its plan job records the plan, or record one: "
    "xce-plan SITE --record, then apply again",
    UNREVIEWED_APPLIED: "to apply only reviewed plans, drop site.unreviewed_apply (its "
    "default is refuse)",
    NOT_RECORDED: "fix the guard errors (or plan with --force where that is intended), then "
    "record the plan again",
    PLAN_UNSIGNED: "make the plan again against this state store: xce-plan --out FILE (or "
    "--record)",
    NOT_IN_CONFIG: "the plan file was edited or made by another tool: make the plan again "
    "with xce-plan --out FILE, and review it",
    DESTROY_NOT_GIVEN: "make the plan again with xce-plan --destroy if deleting users' data "
    "is intended",
    DISCOVERY_GROUP_MISSING: "compile the site again: site.discovery.group must name one of "
    "its host groups",
    DISCOVERY_BAD_PATTERN: "compile the site again; write each pattern as a hostlist "
    "(cn[0001-0100]) or a glob (burst*)",
    BASE_NOT_IN_GIT: "run xce-plan in a clone of the site's repository, or leave out --base",
})
problem = HINTS.problem
