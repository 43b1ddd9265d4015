"""Drift alike but for its entry is one line (issue 21): 17 hosts past their join deadline
are ``host/cn[0001-0017]`` once, in the news and the tables of every format and the mail,
with durations for people, a next step for each class, and a fix that targets exactly the
folded entries."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from syrupy.assertion import SnapshotAssertion

from compiler.contract.supply_map import Entry, SupplyMap
from compiler.core.globs import glob_matcher
from compiler.core.secrets import Redactor
from compiler.core.units import duration_seconds, duration_text
from reconciler.drift.detect import Fixer, findings
from reconciler.drift.fold import fold, target_globs
from reconciler.drift.model import Category, DriftReport, Finding, SinceLast
from reconciler.drift.steps import FIX_PLAN, STEPS
from reconciler.planner import make_plan
from reconciler.render.drift import FORMATS, Shown
from reconciler.state import StateStore
from tests.drift.mailserver import Inbox, smtp_server
from tests.drift.test_email_notify import run, settings

OWNER = "site/t"
NOW = 2_000_000_000.0
DAY = 86400
HOSTS = [f"host/cn{i:04d}" for i in range(1, 18)]
DIRS = [f"volume-dir/v/u{i}" for i in range(1, 6)]


def e(entry_id: str, provider: str, state: str = "available", **kw: Any) -> Entry:
    kw.setdefault("source", "config")
    kw.setdefault("owner", OWNER)
    return Entry(entry_id, entry_id.partition("/")[0], state, provider=provider, **kw)


def _maps() -> tuple[SupplyMap, SupplyMap]:
    """17 static hosts that never joined (expected for 3 to 4 days against a deadline of
    one), a lost host, a discovered one, 5 missing user directories and one not in config."""
    desired = {h: e(h, "ctl") for h in HOSTS} | {"host/gn01": e("host/gn01", "ctl")}
    desired |= {d: e(d, "fs", spec={"mode": "0700"}) for d in DIRS}
    live = {h: e(h, "ctl", "expected", spec={"since": NOW - 3 * DAY - 3600 * i})
            for i, h in enumerate(HOSTS)}
    live |= {"host/gn01": e("host/gn01", "ctl", "lost"),
             "host/x9": e("host/x9", "ctl", source="discovered", owner=None),
             "volume-dir/v/zed": e("volume-dir/v/zed", "fs")}
    return (SupplyMap(desired, owner=OWNER, settings={"join_deadline": DAY}),
            SupplyMap(live, owner=OWNER))


def _found() -> tuple[Finding, ...]:
    desired, live = _maps()
    return findings(make_plan(desired, live, now=NOW), desired, live, Fixer(("site",)),
                    Redactor())


def _report() -> DriftReport:
    found = _found()
    return DriftReport("hpc-east", datetime.fromtimestamp(NOW, UTC), found,
                       since_last=SinceLast(new=found), recorded=True)


def render(fmt: str) -> str:
    return FORMATS.render(Shown(_report()), fmt)


def test_seventeen_hosts_past_their_deadline_are_one_line_in_every_format() -> None:
    for fmt in ("text", "markdown", "html"):
        shown = render(fmt)
        assert "host/cn0005" not in shown, fmt  # before: 17 news lines and 17 rows
        assert shown.count("host/cn[0001-0017]") == 2, fmt  # the news, and the table
        assert "17 entries" in shown, fmt
        assert not re.search(r"\b\d+s\b", shown), fmt  # no "270000s"
        assert "past its join deadline of 1 d" in shown, fmt
        assert "2 d to 2 d 16 h past its join deadline" in shown, fmt  # the range of all 17
        assert "volume-dir/v/u[1-5]" in shown, fmt


def test_the_text_report_of_the_folded_site(snapshot: SnapshotAssertion) -> None:
    assert render("text") == snapshot


def test_the_markdown_report_of_the_folded_site(snapshot: SnapshotAssertion) -> None:
    assert render("markdown") == snapshot


def test_each_class_has_a_next_step_and_every_command_it_names_exists() -> None:
    by_entry = {f.entry: f for f in _found()}
    steps = {
        "host/cn0001": "check how cn0001 is provisioned",  # never joined
        "host/gn01": "check gn01 (power, network, its node manager)",  # lost
        "host/x9": "add x9 to the config to keep it",  # discovered, an orphan
        "volume-dir/v/zed": "set `site.management.volume-dir: correct-destructive`",  # orphan
    }
    for entry, step in steps.items():
        assert step in by_entry[entry].step, (entry, by_entry[entry].step)
        assert by_entry[entry].fix is None
    assert all(not f.step for f in by_entry.values() if f.fix is not None)
    commands = {c for f in by_entry.values() for c in re.findall(r"`(xce-[^`]*)`", f.step)}
    commands.update(c for f in fold(by_entry.values()) for c in re.findall(r"`(xce-[^`]*)`",
                                                                           f.step))
    for step in STEPS:  # every rule's commands, not only those this site needs
        commands.update(re.findall(r"`(xce-[^`]*)`", step.text.format(
            name="cn01", id="host/cn01", kind="host", provider="ctl", site="site",
            plan=FIX_PLAN)))
    for command in {part.strip() for c in commands for part in c.split("&&")}:
        _exists(command)
    text = render("text")
    assert "not corrected by xce-apply (see why above)" not in text
    assert "next: check how cn[0001-0017] is provisioned" in text
    assert "`xce-map report join cn[0001-0017]`" in text  # a hostlist, as xce-map takes


def _exists(command: str) -> None:
    """``command``'s program is installed, and takes each option it is given (its --help,
    of the subcommand where it has them, lists it)."""
    words = shlex.split(command)
    program = Path(sys.executable).parent / words[0]
    assert program.exists(), command
    sub = [w for w in words[1:3] if w in ("report", "join", "available")]
    shown = subprocess.run([program, *sub, "--help"], capture_output=True, text=True,
                           check=True).stdout
    for option in (w for w in words if w.startswith("--")):
        assert option in shown, (command, option)


def test_a_folded_fix_targets_exactly_its_entries() -> None:
    (missing,) = [f for f in fold(_found()) if f.category is Category.MISSING]
    assert missing.entries == tuple(DIRS) and missing.fix is not None
    targets = re.findall(r"--target '?([^ ']+)'?", missing.fix)
    desired, live = _maps()
    plan = make_plan(desired, live, now=NOW, targets=targets)
    assert sorted(a.entry for a in plan.actions) == DIRS


def test_target_globs_match_exactly_the_ids_among_their_neighbours() -> None:
    universe = [f"host/cn{i:04d}" for i in range(0, 1200)] + [f"host/cn{i}" for i in range(150)]
    picks = [universe[1:18], universe[95:1101], universe[3:4] + universe[7:9] + universe[999:1001],
             universe[1200:1350], universe[1209:1221], ["host/a[1]", "host/b*"]]
    assert target_globs(universe[1:18]) == ["host/cn000[1-9]", "host/cn001[0-7]"]
    for ids in picks:
        rx = glob_matcher(target_globs(ids))
        assert rx is not None
        assert {u for u in [*universe, *ids] if rx.fullmatch(u)} == set(ids), ids[:3]


def test_durations_are_for_people_and_read_back() -> None:
    assert [duration_text(s) for s in (0, 45, 60, 3725, 183600, 86460, 270000)] == [
        "0 s", "45 s", "1 min", "1 h 2 min", "2 d 3 h", "1 d", "3 d 3 h"]
    assert duration_seconds("2 d 3 h") == 183600


def test_the_mail_says_the_seventeen_hosts_once(store: StateStore) -> None:
    inbox = Inbox("")
    with smtp_server(inbox) as port:
        notice = run(store, settings(port), _found(), datetime.fromtimestamp(NOW, UTC))
    assert not notice.failed and len(inbox.received) == 1
    message = inbox.received[0].message
    for kind in ("plain", "html"):
        part = message.get_body(preferencelist=(kind,))
        assert part is not None
        body = part.get_content()
        assert "host/cn0005" not in body and body.count("host/cn[0001-0017]") == 2, kind
        assert "xce-map report join cn[0001-0017]" in body, kind


def test_alike_drift_of_another_provider_is_not_folded() -> None:
    found = _found()
    lost = next(f for f in found if f.entry == "host/gn01")
    other = Finding(lost.category, "host/gn02", "host", "ctl2", lost.reason, lost.desired_state,
                    lost.live_state, lost.fields, step=lost.step.replace("gn01", "gn02"))
    assert [f.size for f in fold([lost, other])] == [1, 1]
    same = Finding(lost.category, "host/gn02", "host", "ctl", lost.reason, lost.desired_state,
                   lost.live_state, lost.fields, step=lost.step.replace("gn01", "gn02"))
    (folded,) = fold([lost, same])
    assert folded.entry == "host/gn[01-02]" and "`xce-map report join gn[01-02]`" in folded.step
