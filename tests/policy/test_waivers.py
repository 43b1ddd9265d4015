"""Waiver expiry against an injected 'today': the boundaries, and what a waiver allows."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from tests.policy.helpers import POLICIES, WAIVER_SITE, compile_tree, opcode_names, write

SITE = "\n" + WAIVER_SITE  # a blank first line, as the line numbers below count
EXPIRES = datetime.date(2027, 6, 30)


def _codes(tmp_path: Path, today: datetime.date, expires: str = "2027-06-30") -> set[str]:
    write(tmp_path / "site" / "p.yaml", SITE.format(expires=expires))
    _, problems = compile_tree(POLICIES, tmp_path / "site", today)
    return {p.code for p in problems}


@pytest.mark.parametrize(
    ("today", "codes"),
    [
        (EXPIRES - datetime.timedelta(days=200), set()),
        (EXPIRES - datetime.timedelta(days=31), set()),
        (EXPIRES - datetime.timedelta(days=30), {"XCE645"}),  # warn_days: 30
        (EXPIRES, {"XCE645"}),  # valid through its last day
        (EXPIRES + datetime.timedelta(days=1), {"XCE640", "XCE630"}),  # expired: no waiver
        (EXPIRES - datetime.timedelta(days=366), set()),  # max_days: 366
        (EXPIRES - datetime.timedelta(days=367), {"XCE643", "XCE630"}),
    ],
)
def test_expiry_boundaries(tmp_path: Path, today: datetime.date, codes: set[str]) -> None:
    assert _codes(tmp_path, today) == codes


def test_a_valid_waiver_grants_and_is_recorded(tmp_path: Path) -> None:
    write(tmp_path / "site" / "p.yaml", SITE.format(expires="2027-06-30"))
    doc, problems = compile_tree(POLICIES, tmp_path / "site", datetime.date(2027, 1, 1))
    assert problems == []
    assert "config.reload" in opcode_names(doc, "proxy")
    assert [w["name"] for w in doc["waivers"]] == ["proxy-admin-reload"]
    assert doc["waivers"][0]["expires"] == "2027-06-30"


def test_expiry_may_be_a_quoted_date_but_not_anything_else(tmp_path: Path) -> None:
    today = datetime.date(2027, 1, 1)
    assert _codes(tmp_path, today, '"2027-06-30"') == set()
    assert _codes(tmp_path, today, "next-year") == {"XCE604", "XCE630"}
    assert _codes(tmp_path, today, "2027-06-30T10:00:00") == {"XCE604", "XCE630"}


def test_without_the_waiver_the_grant_is_a_violation_at_its_line(tmp_path: Path) -> None:
    text = SITE.format(expires="2027-06-30")
    write(tmp_path / "site" / "p.yaml", text[: text.index("  waivers:")])
    _, problems = compile_tree(POLICIES, tmp_path / "site")
    [p] = problems
    assert p.code == "XCE630" and p.subject == "proxy"
    assert p.line == 6  # "opcodes: [config.reload]" (line 1 is the blank after the quotes)
    assert p.also and p.also[0].file.endswith("guardrails.yaml")


def test_a_broad_waiver_lists_only_what_it_waives(tmp_path: Path) -> None:
    text = SITE.format(expires="2027-06-30").replace(
        "opcodes: [config.reload]\n      reason", 'opcodes: ["*"]\n      reason'
    )
    write(tmp_path / "site" / "p.yaml", text)
    doc, problems = compile_tree(POLICIES, tmp_path / "site", datetime.date(2027, 1, 1))
    assert problems == []
    assert doc["waivers"][0]["opcodes"] == ["config.reload"]  # not every opcode of "*"
