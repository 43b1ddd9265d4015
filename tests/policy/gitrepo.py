"""A real git repository in a temporary folder holding policies/ and a site-config/."""

from __future__ import annotations

import datetime
import shutil
from pathlib import Path

import git

from tests.policy.helpers import FIXTURES, POLICIES

ACTOR = git.Actor("Policy Tester", "tester@example.org")
WAIVER_DATE = "2027-06-30"


class PolicyRepo:
    """Commits policy changes the way a pull request would."""

    def __init__(self, path: Path, *, with_policies: bool = True) -> None:
        self.path = path
        self.repo = git.Repo.init(path, initial_branch="main")
        if with_policies:
            shutil.copytree(POLICIES, path / "policies")
            shutil.copytree(FIXTURES / "site", path / "site-config")
            # keep the fixture's waiver valid whenever the CLI (real date) runs
            later = (datetime.date.today() + datetime.timedelta(days=200)).isoformat()
            self.edit("site-config/policy-waivers.yaml", WAIVER_DATE, later)
        else:
            self.write("README.md", "no policies yet\n")
        self.base = self.commit("base")

    def write(self, rel: str, text: str) -> None:
        path = self.path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def edit(self, rel: str, old: str, new: str) -> None:
        text = (self.path / rel).read_text()
        assert old in text, f"{old!r} not in {rel}"
        self.write(rel, text.replace(old, new, 1))

    def commit(self, message: str) -> str:
        self.repo.git.add(A=True)
        return self.repo.index.commit(message, author=ACTOR, committer=ACTOR).hexsha
