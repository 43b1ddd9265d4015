"""The planner: desired + live supply maps and the site's settings → an ordered Plan."""

from reconciler.planner.core import make_plan

__all__ = ["make_plan"]
