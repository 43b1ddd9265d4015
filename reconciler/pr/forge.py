"""What xce-pr needs of a forge, whichever it is: four calls behind one protocol, so the
sticky-comment logic is written once for GitHub and GitLab (``github.py``, ``gitlab.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from compiler.core.problems import UserError
from reconciler.pr.codes import HINTS, NO_PULL

OPEN, MERGED, CLOSED = "open", "merged", "closed"


@dataclass(frozen=True)
class Comment:
    id: int
    url: str  # for people: the comment on the pull request's page
    body: str


@dataclass(frozen=True)
class Pull:
    number: int
    state: str  # OPEN, MERGED or CLOSED, whatever the forge calls them
    url: str


class Forge(Protocol):
    label: str  # "GitHub", "GitLab": how messages name it
    body_limit: int  # the longest comment it takes, in characters

    def find_comment(self, pull: int, marker: str) -> Comment | None:
        """The first comment on ``pull`` whose body starts with ``marker``, if any."""

    def create_comment(self, pull: int, body: str) -> Comment: ...

    def update_comment(self, pull: int, comment: Comment, body: str) -> Comment: ...

    def pulls_for_commit(self, sha: str) -> list[Pull]:
        """The pull requests the forge associates with a commit (head or merged)."""


def pull_of_commit(forge: Forge, sha: str) -> int:
    """The one pull request of ``sha``: an open one, else the merged one (an apply job after
    the merge comments on the pull request it merged). Several, or none: say so."""
    pulls = forge.pulls_for_commit(sha)
    for state in (OPEN, MERGED):
        alike = [p for p in pulls if p.state == state]
        if len(alike) == 1:
            return alike[0].number
        if alike:
            raise _no_pull(f"commit {sha} is in {len(alike)} {state} pull requests "
                           f"({_numbers(alike)}) on {forge.label}", "pass the one to comment "
                           "on with --pr N")
    closed = f" (only closed ones: {_numbers(pulls)})" if pulls else ""
    raise _no_pull(f"{forge.label} knows no open or merged pull request with commit "
                   f"{sha}{closed}", "open the pull request first (GitHub lists a commit of a "
                   "branch only while a pull request is open), or pass --pr N")


def _numbers(pulls: Sequence[Pull]) -> str:
    return ", ".join(f"#{p.number}" for p in sorted(pulls, key=lambda p: p.number))


def _no_pull(message: str, hint: str) -> UserError:
    return UserError([HINTS.problem(NO_PULL, message, "xce-pr", hint)])
