"""The planner: desired + live supply maps and the site's settings → an ordered Plan."""

from reconciler.planner.make import make_plan

__all__ = ["make_plan"]
