"""The digests the docs show are the ones the code produces, so they cannot go stale.

A guide's command outputs (the desired digest of a compiled site) are checked by following the
guide with this checkout's install (tests/guide.py; tests/wheel/test_getting_started.py does
the same from the wheel). Every other digest in the docs is a dataset digest: what
``xce-digest`` gives for a dataset of the pinned example, or an obviously made-up one
(``sha256:000…01``, for a wrong value in an example). ``XCE_UPDATE_DOCS=1`` rewrites a stale
guide digest in place.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from reconciler.providers.dataset_digest import dataset_digest
from tests import guide
from tests.conftest import EXAMPLE_SITE, ROOT
from tests.wheel.conftest import Installed

DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
GUIDES = [ROOT / "docs" / "getting-started.md"]
MADE_UP = {f"sha256:{'0' * 63}{digit}" for digit in "0123456789abcdef"}
UPDATE = f"{guide.UPDATE_ENV}=1 pytest {Path(__file__).relative_to(ROOT)}"


def _outside_guide_transcripts(doc: Path) -> str:
    """The doc's text without the console blocks of a guide (those are checked by following)."""
    text = doc.read_text(encoding="utf-8")
    if doc not in GUIDES:
        return text
    lines = text.splitlines()
    for block in guide.blocks(text):
        if block.lang == "console":
            lines[block.line - 1:block.line - 1 + len(block.lines)] = [""] * len(block.lines)
    return "\n".join(lines)


def test_every_other_digest_in_the_docs_is_a_dataset_of_the_example() -> None:
    datasets = {dataset_digest(path) for path in (EXAMPLE_SITE / "sample-data").iterdir()}
    assert len(datasets) == 4
    wrong = [
        f"{doc.relative_to(ROOT)}: {digest}"
        for doc in DOCS
        for digest in guide.DIGEST.findall(_outside_guide_transcripts(doc))
        if digest not in datasets | MADE_UP
    ]
    assert not wrong, (
        "digests in the docs that are no dataset of tests/example_site/ (xce-digest "
        f"tests/example_site/sample-data/*) nor made up ({sorted(MADE_UP)[0]}):\n"
        + "\n".join(wrong)
    )


@pytest.mark.slow
@pytest.mark.parametrize("doc", GUIDES, ids=lambda doc: doc.name)
def test_the_guide_shows_what_its_commands_print(doc: Path, tmp_path: Path) -> None:
    """Followed with this checkout's install (the dev venv, activated as a reader would)."""
    dev_venv = Installed(venv=Path(sys.prefix), wheel=Path(sys.prefix))  # editable: no wheel
    ran = guide.follow(doc, tmp_path, guide.shell(dev_venv.environ()))
    found = guide.verdict(ran)
    if found.stale and os.environ.get(guide.UPDATE_ENV) == "1":
        guide.rewrite_digests(doc, found.stale)
    elif found.stale:
        found.problems.append(
            f"{doc.relative_to(ROOT)} shows digests the commands no longer print:\n"
            + "\n".join(f"  {old} → {new}" for old, new in found.stale.items())
            + f"\nrewrite them in place with: {UPDATE}"
        )
    assert not found.problems, "\n\n".join(found.problems)


def _guide(tmp_path: Path, text: str) -> Path:
    doc = tmp_path / "guide.md"
    doc.write_text(text, encoding="utf-8")
    return doc


def _follow(doc: Path) -> tuple[list[guide.Ran], guide.Verdict]:
    ran = guide.follow(doc, doc.parent, guide.shell(dict(os.environ)))
    return ran, guide.verdict(ran)


def test_a_stale_digest_is_reported_and_rewritten_in_place(tmp_path: Path) -> None:
    printed, shown = f"sha256:{'a' * 64}", f"sha256:{'b' * 64}"
    doc = _guide(tmp_path, f"```console\n$ echo 'desired digest {printed}'\n"
                           f"desired digest {shown}\n```\n")
    _, found = _follow(doc)
    assert found == guide.Verdict(problems=[], stale={shown: printed})
    guide.rewrite_digests(doc, found.stale)
    assert printed in doc.read_text() and shown not in doc.read_text()
    assert _follow(doc)[1] == guide.Verdict(problems=[], stale={})


def test_files_edits_placeholders_and_exit_codes_are_followed(tmp_path: Path) -> None:
    doc = _guide(tmp_path, "\n".join([
        "<!-- guide: file conf/a.yaml -->", "```yaml", "mem: 4TIB", "rack: D", "```",
        "<!-- guide: edit conf/a.yaml -->", "```diff", "-mem: 4TIB", "+mem: 4TiB", "```",
        "```console", "$ cd conf", "$ cat a.yaml", "mem: 4TiB", "…",
        "$ echo 'at 0123456789ab in 0.25s'", "at <commit> in <seconds>",
        "$ sh -c 'exit 2'", "$ echo $?", "2", "```", ""]))
    ran, found = _follow(doc)
    assert found.problems == [] and [r.returncode for r in ran] == [0, 0, 0, 2, 0]


def test_other_output_and_an_unexpected_failure_are_problems(tmp_path: Path) -> None:
    doc = _guide(tmp_path, "```console\n$ echo one\ntwo\n$ false\n$ echo never\n```\n")
    ran, found = _follow(doc)
    assert [r.command.text for r in ran] == ["echo one", "false"]  # stops at the failure
    assert found.problems[0].startswith("it prints other lines than the guide shows")
    assert found.problems[1].startswith("it fails, and the guide shows no `echo $?`")
