"""``reconciler.dataset_versions``: an applied ``name@version`` keeps its digest and size.

Pure checks over small maps: which live entries count as "applied" (the record, else the
copies; nothing a provider that did not report says), when a correction is in effect, and
how the plan shows it. The CLI end to end is in tests/e2e/test_e2e_dataset_versions.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from compiler.contract.supply_map import Entry, SupplyMap
from compiler.core.problems import UserError
from reconciler.dataset_versions import (
    CHANGED,
    MISMATCHED,
    Verdict,
    check_versions,
    enforce_versions,
    explain_corrections,
    size_text,
)
from reconciler.plan.model import Action, Plan, Verb

OWNER = "site/t"
OLD = "sha256:" + "a" * 64
NEW = "sha256:" + "b" * 64
OTHER = "sha256:" + "c" * 64
KIB = 1024


def record(digest: str = OLD, size: int | None = 2 * KIB, *, owner: str | None = OWNER,
           correction: Mapping[str, Any] | None = None, provider: str = "ctl") -> Entry:
    spec: dict[str, Any] = {"digest": digest, "source": "d@1"}
    if correction is not None:
        spec["correction"] = dict(correction)
    return Entry("dataset/d@1", "dataset", "available", "config", provider, amount=size,
                 spec=spec, owner=owner)


def copy(digest: str = OLD, location: str = "group/g", provider: str = "cache",
         state: str = "available") -> Entry:
    return Entry(f"dataset-copy/d@1@{location}", "dataset-copy", state, "config", provider,
                 location=location, amount=2 * KIB,
                 spec={"dataset": "d@1", "digest": digest}, owner=OWNER)


def fix(digest: str = OLD, size: int = 2 * KIB, reason: str = "truncated") -> dict[str, Any]:
    return {"reason": reason, "replaces": {"digest": digest, "size": size}}


def maps(desired: list[Entry], live: list[Entry], unknown: Mapping[str, str] | None = None,
         contested: Mapping[str, str] | None = None) -> tuple[SupplyMap, SupplyMap]:
    return (SupplyMap({e.id: e for e in desired}, owner=OWNER),
            SupplyMap({e.id: e for e in live}, owner=OWNER, unknown=unknown or {},
                      unknown_entries=contested or {}))


def verdict(desired: list[Entry], live: list[Entry], **kw: Any) -> Verdict:
    return check_versions(*maps(desired, live, **kw))


def codes(v: Verdict) -> list[str]:
    return [p.code for p in v.refusals]


def test_an_unchanged_version_passes() -> None:
    assert verdict([record(), copy()], [record(), copy()]) == Verdict((), {})


@pytest.mark.parametrize(("desired", "changed"), [
    (record(NEW), "its digest cannot change"),
    (record(size=3 * KIB), "its size cannot change"),
    (record(NEW, 3 * KIB), "its digest and size cannot change"),
])
def test_a_changed_record_is_refused_naming_what_was_applied(desired: Entry,
                                                            changed: str) -> None:
    v = verdict([desired], [record()])
    assert codes(v) == [CHANGED]
    p = v.refusals[0]
    assert p.subject == "dataset/d@1" and p.where is None  # a compiled map: no file
    assert f"d@1 was applied with digest {OLD} and size 2KiB (dataset/d@1 at provider " \
           f"ctl): a name@version is immutable, so {changed}" == p.message
    assert f"replaces: {{digest: {OLD}, size: 2KiB}}" in p.hint
    assert "add a new version of d" in p.hint


def test_a_version_never_applied_may_change() -> None:
    assert verdict([record(NEW, 3 * KIB), copy(NEW)], []).refusals == ()


def test_a_record_of_another_owner_counts_the_name_is_the_clusters() -> None:
    assert codes(verdict([record(NEW)], [record(owner="site/other")])) == [CHANGED]


def test_without_a_record_the_copies_tell_what_was_applied() -> None:
    v = verdict([record(NEW)], [copy(OLD, "group/a"), copy(NEW, "group/b")])
    assert codes(v) == [CHANGED]
    message = v.refusals[0].message
    assert f"digest {OLD} (its copy at group/a (provider cache))" in message
    assert "group/b" not in message  # a copy with the desired digest is no objection


@pytest.mark.parametrize("state", ["available", "staging", "corrupt", "evicting"])
def test_a_copy_in_any_state_holds_bytes_under_the_name(state: str) -> None:
    assert codes(verdict([record(NEW)], [copy(OLD, state=state)])) == [CHANGED]


def test_with_a_record_a_disagreeing_copy_is_a_bad_copy_not_a_version() -> None:
    """The planner re-stages it with the record's digest: nothing changes identity."""
    assert verdict([record(), copy()], [record(), copy(OTHER)]).refusals == ()


def test_the_size_a_copy_has_on_disk_is_not_the_declared_size() -> None:
    assert verdict([record(size=3 * KIB)], [copy(OLD)]).refusals == ()


def test_a_record_without_a_size_is_compared_by_digest() -> None:
    assert verdict([record(size=3 * KIB)], [record(size=None)]).refusals == ()
    assert codes(verdict([record(NEW)], [record(size=None)])) == [CHANGED]


def test_an_unknown_provider_is_not_nothing_applied() -> None:
    """With the record's provider silent, a known copy still refuses the change."""
    live = [copy(OLD)]
    assert codes(verdict([record(NEW)], live, unknown={"ctl": "down"})) == [CHANGED]


def test_entries_the_live_map_does_not_vouch_for_are_not_evidence() -> None:
    """A snapshot may list a silent provider's entries; a contested id is no one's."""
    stale = [record(OTHER), copy(OTHER)]
    assert verdict([record()], stale, unknown={"ctl": "down", "cache": "down"}).refusals == ()
    contested = {"dataset/d@1": "reported by two", "dataset-copy/d@1@group/g": "by two"}
    assert verdict([record()], stale, contested=contested).refusals == ()
    # ... while the copy it does vouch for is compared:
    assert codes(verdict([record()], stale, unknown={"ctl": "down"})) == [CHANGED]


def test_a_correction_naming_the_applied_version_is_in_effect() -> None:
    v = verdict([record(NEW, 3 * KIB, correction=fix())], [record(), copy()])
    assert v == Verdict((), {"d@1": "truncated"})


def test_a_correction_through_the_copies_checks_their_digest() -> None:
    v = verdict([record(NEW, correction=fix(size=99))], [copy(OLD)])
    assert v.corrections == {"d@1": "truncated"}  # copies tell no declared size
    assert codes(verdict([record(NEW, correction=fix(OTHER))], [copy(OLD)])) == [MISMATCHED]


@pytest.mark.parametrize(("correction", "field"), [
    (fix(OTHER), "digest"),
    (fix(size=4 * KIB), "size"),
])
def test_a_correction_naming_another_version_is_refused(correction: dict[str, Any],
                                                         field: str) -> None:
    v = verdict([record(NEW, correction=correction)], [record()])
    assert codes(v) == [MISMATCHED] and v.corrections == {}
    assert f"was applied with digest {OLD} and size 2KiB" in v.refusals[0].message
    assert f"replaces: {{digest: {OLD}, size: 2KiB}}" in v.refusals[0].hint


def test_an_applied_correction_left_in_place_is_quiet_until_the_next_change() -> None:
    applied = record(NEW, correction=fix())
    assert verdict([applied], [applied]) == Verdict((), {})
    assert codes(verdict([record(OTHER, correction=fix())], [applied])) == [MISMATCHED]


def test_enforce_raises_every_refusal_at_once() -> None:
    def other(size: int) -> Entry:
        return Entry("dataset/e@2", "dataset", "available", "config", "ctl", amount=size,
                     spec={"digest": OLD})

    desired, live = maps([record(NEW), other(2)], [record(), other(1)])
    with pytest.raises(UserError) as err:
        enforce_versions(desired, live)
    assert sorted(p.subject or "" for p in err.value.problems) == ["dataset/d@1", "dataset/e@2"]
    assert enforce_versions(*maps([record()], [record()])) == {}


def _action(verb: str, entry: str, before: bool = True) -> Action:
    kind = entry.partition("/")[0]
    return Action(f"{verb}:{entry}", Verb(verb), entry, kind, "p", "why",
                  before={"id": entry} if before else None)


def test_the_plan_shows_the_reason_on_the_update_and_the_restages_only() -> None:
    actions = (
        _action("update", "dataset/d@1"),
        _action("stage", "dataset-copy/d@1@group/a"),  # a re-stage
        _action("stage", "dataset-copy/d@1@group/new", before=False),  # a first copy
        _action("update", "dataset/e@1"),  # another dataset
        _action("stage", "dataset-copy/d@10@group/a"),  # a name that only starts alike
    )
    plan = explain_corrections(Plan(actions), {"d@1": "truncated"})
    reasons = [a.reason for a in plan.actions]
    assert reasons == ["corrected in place: truncated; why", "why; d@1 corrected: truncated",
                       "why", "why", "why"]
    assert explain_corrections(Plan(actions), {}) == Plan(actions)


@pytest.mark.parametrize(("n", "text"), [
    (150 * 1024**3, "150GiB"), (2048, "2KiB"), (1536, "1536"), (999, "999B"), (0, "0B"),
])
def test_sizes_are_written_back_exactly(n: int, text: str) -> None:
    assert size_text(n) == text


@pytest.mark.parametrize("owner", ["site/other", None])
def test_a_record_this_site_does_not_own_cannot_be_corrected_by_it(owner: str | None) -> None:
    """The planner never updates it, so the copies would get bytes its record denies."""
    v = verdict([record(NEW, correction=fix())], [record(owner=owner)])
    assert codes(v) == [CHANGED] and v.corrections == {}
    assert f"only its owner ({owner or 'no owner tag'}) can correct it" in v.refusals[0].hint
    assert "correction:" not in v.refusals[0].hint
