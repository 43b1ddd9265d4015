"""Ignore rules and waivers as code (the ``drift:`` section): how they match, when a waiver
expires and what the compiler warns a week before, that they never change the desired
digest, and xce-drift applying them to the drifted world (tests/drift/world.py), from the
site and from a compiled map."""

from __future__ import annotations

import datetime
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from compiler.cmds.compile import main as compile_main
from compiler.compile import compile_site, located
from compiler.contract.drift import CompiledDrift
from compiler.core import codes
from compiler.core.problems import Problems
from compiler.model import drift as language
from reconciler.drift.model import Category, FieldDiff, Finding
from reconciler.drift.rules import rules_of
from reconciler.drift.screen import screen
from reconciler.pipeline import NOT_COMPILED
from reconciler.state import open_store
from tests.drift.reports import AT, sample
from tests.drift.world import make_site, run_drift
from tests.e2e.workspace import CliRun, Workspace

TODAY = AT.date()


def rules(**section: Any) -> CompiledDrift:
    """Compiled drift settings, each rule placed as the compiler places it."""
    for key in ("ignore", "waivers"):
        section[key] = [{**r, "where": f"drift.yaml:{i + 3}:7"}
                        for i, r in enumerate(section.get(key, []))]
    return CompiledDrift.model_validate(section)


def entries(found: tuple[Finding, ...]) -> list[str]:
    return sorted(f.entry for f in found)


def test_an_entry_glob_spans_slashes_and_every_key_must_match() -> None:
    drift = rules(ignore=[
        {"entries": "volume-dir/*", "provider": "shared-fs", "reason": "scratch, purged"},
        {"entries": "host/cn0[2-3]", "kind": "counter", "reason": "the wrong kind"},
        {"kind": "counter", "reason": "counters are recounted nightly"},
    ])
    got = screen(sample().findings, rules_of(drift), AT)
    assert entries(got.ignored) == ["counter/slots@host/cn09", "volume-dir/shared/alice",
                                    "volume-dir/shared/bob", "volume-dir/shared/carol"]
    assert "host/cn02" in entries(got.kept)
    remark = next(f.remark for f in got.ignored if f.entry == "volume-dir/shared/bob")
    assert remark == "ignored by the rule at drift.yaml:3:7: scratch, purged"


def test_a_field_rule_takes_only_its_fields_and_nothing_hides_an_unknown() -> None:
    two = Finding(Category.DIFFERS, "volume-dir/shared/dan", "volume-dir", "shared-fs",
                  "differs", "available", "available",
                  (FieldDiff("spec.mode", "0700", "0755"), FieldDiff("spec.owner", "dan", "root")))
    drift = rules(ignore=[{"field": "spec.mode", "reason": "users chmod their own folder"},
                          {"provider": "cloud", "reason": "the cloud is flaky"}])
    got = screen((two, *sample().findings), rules_of(drift), AT)
    kept = {f.entry: f for f in got.kept}
    assert [d.path for d in kept["volume-dir/shared/dan"].fields] == ["spec.owner"]
    assert [d.path for f in got.ignored if f.entry == "volume-dir/shared/dan"
            for d in f.fields] == ["spec.mode"]
    assert "volume-dir/shared/alice" not in kept  # only its mode differed
    assert kept["provider/cloud"].category is Category.UNKNOWN  # "cannot tell" stays


def _waiver(expires: str, owner: str = "alice@example.org") -> dict[str, Any]:
    return {"entries": "host/cn02", "owner": owner, "reason": "board replacement",
            "expires": expires}


def test_a_waiver_holds_through_its_last_day_and_then_shows_the_drift_again() -> None:
    drift = rules(waivers=[_waiver(TODAY.isoformat())])
    on_the_day = screen(sample().findings, rules_of(drift), AT)
    assert entries(on_the_day.ignored) == ["host/cn02"]
    assert on_the_day.ignored[0].remark.startswith(f"waived until {TODAY} by alice@example.org")
    after = screen(sample().findings, rules_of(drift), AT + datetime.timedelta(days=1))
    assert not after.ignored
    cn02 = next(f for f in after.kept if f.entry == "host/cn02")
    assert cn02.remark == (f"waiver expired on {TODAY} (owner alice@example.org, "
                           "drift.yaml:3:7): board replacement")


def test_a_renewed_waiver_beside_the_expired_one_holds() -> None:
    later = (TODAY + datetime.timedelta(days=30)).isoformat()
    drift = rules(waivers=[_waiver("2026-01-31", "old@example.org"), _waiver(later)])
    got = screen(sample().findings, rules_of(drift), AT)
    assert entries(got.ignored) == ["host/cn02"] and f"until {later}" in got.ignored[0].remark


WAIVED_SITE = """version: 1
drift:
  waivers:
    - entries: host/cn02
      owner: alice@example.org
      reason: board replacement
      expires: 2026-03-31
"""


def _compile(site: Path, today: datetime.date) -> list[str]:
    problems = Problems()
    _, files = compile_site(site, problems, today=today)
    return [f"{p.where.label() if p.where else ''} {p.severity.value} {p.code}: {p.message}"
            for p in located(problems, files) if p.code.startswith("XCE87")]


@pytest.fixture
def small_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    """The drift tests' site, compiled from the folder above it (paths read site-config/…)."""
    monkeypatch.chdir(tmp_path)
    return make_site(tmp_path)


def test_the_compiler_warns_a_week_before_a_waiver_expires(small_site: Workspace) -> None:
    (small_site.site / "drift.yaml").write_text(WAIVED_SITE)
    expires = datetime.date(2026, 3, 31)
    here = "site-config/drift.yaml:7:16"
    assert _compile(small_site.site, expires - datetime.timedelta(days=8)) == []
    assert _compile(small_site.site, expires - datetime.timedelta(days=7)) == [
        f"{here} warning {language.WAIVER_EXPIRES_SOON}: the drift waiver of "
        "alice@example.org expires in 7 day(s), on 2026-03-31"]
    assert _compile(small_site.site, expires) == [
        f"{here} warning {language.WAIVER_EXPIRES_SOON}: the drift waiver of "
        "alice@example.org expires in 0 day(s), on 2026-03-31"]
    assert _compile(small_site.site, expires + datetime.timedelta(days=1)) == [
        f"{here} warning {language.WAIVER_EXPIRED}: the drift waiver of alice@example.org "
        "expired on 2026-03-31: xce-drift reports its drift again"]


BROKEN_RULES = """version: 1
drift:
  ignore:
    - entries: "host/cn[01"
      reason: an unclosed set
    - kind: quota
      resaon: a typo
  waivers:
    - entries: host/cn02
      owner: alice@example.org
      reason: board swap
      expires: 31/03/2026
"""


def test_mistakes_are_errors_at_file_line_column(small_site: Workspace) -> None:
    (small_site.site / "drift.yaml").write_text(BROKEN_RULES)
    problems = Problems()
    compiled, files = compile_site(small_site.site, problems, today=TODAY)
    shown = [f"{p.where.label() if p.where else ''} {p.code}" for p in located(problems, files)]
    assert compiled is None
    assert shown == [
        f"site-config/drift.yaml:4:16 {language.BAD_GLOB}",
        f"site-config/drift.yaml:6:7 {codes.MISSING_KEY}",  # the rule lacks its reason
        f"site-config/drift.yaml:7:7 {codes.UNKNOWN_KEY}",  # 'resaon'
        f"site-config/drift.yaml:12:16 {language.BAD_DATE}",
    ]


def _outputs(site: Path, out: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    assert compile_main([str(site), "--out", str(out)]) == 0
    return (orjson.loads((out / "manifest.json").read_bytes()),
            orjson.loads((out / "drift.json").read_bytes()))


def test_the_section_goes_to_drift_json_and_never_changes_the_desired_digest(
        small_site: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain, none = _outputs(small_site.site, tmp_path / "a")
    assert none == {"version": 1, "ignore": [], "waivers": [], "notify": None}
    (small_site.site / "drift.yaml").write_text(WAIVED_SITE.replace(
        "  waivers:", "  ignore:\n    - {kind: quota, reason: quotas are set by hand}\n"
        "  waivers:"))
    ruled, drift = _outputs(small_site.site, tmp_path / "b")
    assert ruled["desired_digest"] == plain["desired_digest"]
    assert ruled["outputs"]["supply-map.json"] == plain["outputs"]["supply-map.json"]
    assert ruled["outputs"]["drift.json"] != plain["outputs"]["drift.json"]
    assert drift["ignore"] == [{"entries": None, "kind": "quota", "provider": None,
                                "field": None, "reason": "quotas are set by hand",
                                "where": "drift.yaml:4:7"}]  # in the site, from anywhere
    assert drift["waivers"][0]["expires"] == "2026-03-31"


WORLD_RULES = """version: 1
drift:
  ignore:
    - {kind: quota, reason: quotas are raised by the helpdesk's own tool}
    - {entries: volume/shared, field: amount, reason: the volume grows as it is bought}
    - {entries: "counter/capacity@volume/shared", field: amount, reason: and its pool counter}
    - {provider: cloud, reason: an unknown provider is never ignored}
  waivers:
    - {entries: host/cn02, owner: ops@example.org, reason: board swap, expires: 2099-12-31}
    - {kind: volume-dir, owner: bob@example.org, reason: moved by hand, expires: 2001-01-31}
"""


@pytest.fixture
def ruled(world: Workspace, tmp_path: Path) -> Workspace:
    """The world's site with WORLD_RULES, the world's providers and live supply."""
    site = tmp_path / "site-config"
    shutil.copytree(world.site, site)
    (site / "drift.yaml").write_text(WORLD_RULES)
    return Workspace(site=site, workdir=world.workdir, env=world.env)


def _check_world_report(run: CliRun, state: Path) -> None:
    assert run.code == 2, run.err
    doc = orjson.loads(run.out)
    kept = {f["entry"]: f for f in doc["findings"]}
    ignored = {f["entry"]: f["remark"] for f in doc["ignored"]}
    assert sorted(kept) == ["license/ansys@site", "provider/cloud", "volume-dir/shared/bob"]
    assert kept["volume-dir/shared/bob"]["remark"].startswith("waiver expired on 2001-01-31")
    assert sorted(ignored) == ["counter/capacity@volume/shared", "host/cn02",
                               "quota/shared/user/alice", "volume/shared"]
    assert ignored["host/cn02"].startswith("waived until 2099-12-31 by ops@example.org")
    assert doc["counts"]["ignored"] == 4
    with open_store(str(state), state.parent / "unused") as store:
        recorded = {Finding.from_json(e.detail).entry for e in store.open_drift("e2e")}
    assert recorded == set(kept)  # what is ignored or waived is never recorded, so never news


@pytest.mark.parametrize("compiled", [False, True], ids=["site", "compiled map"])
def test_xce_drift_applies_the_rules_to_the_world(
        compiled: bool, ruled: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "state.sqlite"
    args = ["--state", str(state), "--format", "json"]
    if compiled:
        _outputs(ruled.site, tmp_path / "build")
        capsys.readouterr()
        args += ["--desired", str(tmp_path / "build" / "supply-map.json")]
        ruled = Workspace(site=Path(), workdir=ruled.workdir, env=ruled.env)
        run = _desired_run(ruled, capsys, monkeypatch, args)
    else:
        run = run_drift(ruled, capsys, monkeypatch, *args)
        assert f"warning[{language.WAIVER_EXPIRED}]" in run.err  # the compile's warning
    _check_world_report(run, state)


def _desired_run(ws: Workspace, capsys: pytest.CaptureFixture[str],
                 monkeypatch: pytest.MonkeyPatch, args: list[str]) -> CliRun:
    """xce-drift --desired FILE (no site folder), with the world's environment."""
    import reconciler.cmds.drift as drift_cli
    from tests.e2e.workspace import planning

    with planning(ws, monkeypatch):
        code = drift_cli.main(["--workdir", str(ws.workdir), *args])
    out, err = capsys.readouterr()
    return CliRun(code, out, err)


def test_a_drift_json_not_as_the_compiler_writes_it(ruled: Workspace, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    _outputs(ruled.site, tmp_path / "build")
    (tmp_path / "build" / "drift.json").write_text('{"version": 1, "ignore": [{"kind": 7}]}')
    capsys.readouterr()
    run = _desired_run(ruled, capsys, monkeypatch,
                       ["--desired", str(tmp_path / "build" / "supply-map.json")])
    assert run.code == 1 and f"error[{NOT_COMPILED}]" in run.err
    assert "drift settings" in run.err and "Traceback" not in run.err
