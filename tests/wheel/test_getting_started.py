"""docs/getting-started.md, followed by a new admin who installed the wheel in a fresh venv.

The guide's steps run in a temporary folder outside this repository (tests/guide.py says how
a guide is read): every command must exit as the guide shows and print what it shows — digest
lines, error codes and positions, exit codes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import guide
from tests.conftest import ROOT
from tests.wheel.conftest import Installed

pytestmark = [pytest.mark.wheel, pytest.mark.slow]

GUIDE = ROOT / "docs" / "getting-started.md"


def test_a_new_admin_can_follow_the_getting_started_guide(
    installed: Installed, tmp_path: Path
) -> None:
    home = tmp_path / "admin"
    home.mkdir()
    ran = guide.follow(GUIDE, home, guide.shell(installed.environ()))
    found = guide.verdict(ran)
    if found.stale:
        found.problems.append("stale digests: XCE_UPDATE_DOCS=1 pytest tests/test_doc_digests.py")
    assert not found.problems, "\n\n".join(found.problems)
    assert len(ran) > 20, "the guide lost its transcripts (```console blocks)"


@pytest.mark.parametrize("doc", [GUIDE, ROOT / "README.md"], ids=lambda doc: doc.name)
def test_the_docs_install_the_wheel_that_is_built(installed: Installed, doc: Path) -> None:
    """The wheel's file name the docs tell the admin to install is the one the build makes."""
    shown = set(re.findall(r"xce_gitops-[\w.]+-py3-none-any\.whl", doc.read_text("utf-8")))
    assert shown == {installed.wheel.name}
