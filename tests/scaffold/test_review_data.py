"""The texts the plugin's fixtures give, from a site compiled in this process: every line
names its subject, a waiver shows in the review and in the guardrails' status."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from compiler.core.problems import UserError
from compiler.site_repo.create import SMALL_SITE, render_templates
from compiler.site_repo.review_data import (
    build_site,
    map_summary,
    policy_review,
    proxy_allowlists,
    role_allowlists,
)
from tests.policy.helpers import WAIVER_SITE

EXPIRES = datetime.date.today() + datetime.timedelta(days=100)
WAIVER = WAIVER_SITE.format(expires=EXPIRES.isoformat())


@pytest.fixture
def site(tmp_path: Path) -> Path:
    render_templates(tmp_path / "site", SMALL_SITE, "demo", example=False)
    return tmp_path / "site"


def test_every_line_names_its_subject(site: Path) -> None:
    build = build_site(site)
    texts = {
        ("role ",): role_allowlists(build.allowlists),
        ("proxy ",): proxy_allowlists(build.allowlists),
        ("the site's policy: ", "role ", "proxy ", "waiver ", "guardrail "): policy_review(build),
        ("site ", "kind ", "provider ", "group ", "counter/", "quota/", "volume", "settings "):
            map_summary(build),
    }
    for prefixes, text in texts.items():
        lines = text.splitlines()
        assert lines and all(line.startswith(prefixes) for line in lines), text
        assert len(set(lines)) == len(lines), text  # one fact per line, none twice


def test_a_waived_grant_shows_in_the_review_and_the_guardrails(site: Path) -> None:
    (site / "waiver.yaml").write_text(WAIVER)
    build = build_site(site)
    review = policy_review(build).splitlines()
    assert "role proxy gains config.reload (801, admin)  [escalation: gains an admin opcode]" \
        in review
    assert (
        "guardrail admin-only-admin-cli waived by proxy-admin-reload: role proxy may hold "
        f"config.reload until {EXPIRES.isoformat()} (reload after a credential rotation)"
    ) in review
    assert "guardrail spend-only-proxy holds" in review
    assert "guardrail admin-only-admin-cli holds" not in review
    proxies = proxy_allowlists(build.allowlists).splitlines()
    assert "proxy proxy-b holds config.reload (801, config, admin)" in proxies


def test_a_site_that_does_not_compile_is_a_user_error_with_located_problems(site: Path) -> None:
    (site / "bad.yaml").write_text("version: 1\nhost_groups:\n  - name: x\n    hostz: a1\n")
    with pytest.raises(UserError) as caught:
        build_site(site)
    (problem,) = caught.value.problems
    assert (problem.code, problem.line, problem.column) == ("XCE101", 4, 5)
