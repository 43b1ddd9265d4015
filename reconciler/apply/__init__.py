"""The journaled, locked, resumable apply (issue 5): a plan's actions become provider calls.

``apply`` runs a saved plan, or plans and applies in one go; ``reconciler.render.apply``
shows the report.
"""

from reconciler.apply.calls import RetryPolicy
from reconciler.apply.report import ApplyReport, Outcome, Status
from reconciler.apply.session import ApplyOptions, FreshPlan, apply

__all__ = [
    "ApplyOptions",
    "ApplyReport",
    "FreshPlan",
    "Outcome",
    "RetryPolicy",
    "Status",
    "apply",
]
