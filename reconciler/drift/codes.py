"""xce-drift's problem codes (XCE850–XCE869, docs/errors.md "Drift"), each named once.

XCE850–XCE854 are the command's and its templates'; XCE855–XCE869 are free for it. Ignore
rules and waivers (compiler side) and email have XCE870–XCE889, beside their code.
"""

from __future__ import annotations

from compiler.core.problems import Hints

USAGE = "XCE850"
TEMPLATE_SYNTAX = "XCE851"
TEMPLATE_FAILED = "XCE852"
TEMPLATES_UNREADABLE = "XCE853"
CANNOT_WRITE = "XCE854"

HINTS = Hints({
    TEMPLATE_SYNTAX: "fix the template at that line (jinja2's syntax), or delete the file to "
    "use the bundled template",
    TEMPLATE_FAILED: "the template uses a name the drift report does not have, or a filter "
    "fails on its value; docs/drift.md, \"Templates\", lists what a template gets",
    TEMPLATES_UNREADABLE: "pass a folder of templates (--templates DIR), or leave it out to "
    "use the site's templates/drift/ or the bundled templates",
    CANNOT_WRITE: "check that the folder can be written and has space, or pass another --out",
})
problem = HINTS.problem
