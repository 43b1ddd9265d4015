"""Who commits in a test's git repository: the one way to make git commit as someone, for
``git`` commands run with an environment (merges, pipelines' own commits)."""

from __future__ import annotations

import git

SITE_ADMIN = git.Actor("Site Admin", "admin@acme.example")


def identity(actor: git.Actor) -> dict[str, str]:
    """The environment under which git authors and commits as ``actor``."""
    return {f"GIT_{role}_{field}": value or "" for role in ("AUTHOR", "COMMITTER")
            for field, value in (("NAME", actor.name), ("EMAIL", actor.email))}
