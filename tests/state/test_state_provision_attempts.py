"""Provisioning attempts whose host never joined (P6): recorded once per released instance,
kept per site, forgotten only while still the record the plan saw."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from reconciler.plan.attempts import ProvisionAttempts
from reconciler.state import StateStore

AT = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
LATER = datetime(2026, 12, 1, 10, 40, tzinfo=UTC)


def test_a_failure_is_recorded_and_read_back(store: StateStore) -> None:
    assert store.provision_attempts("east") == {}
    got = store.record_provision_failure("east", "instance/b01", failures=1, template="t1",
                                         instance="1764583200", at=AT)
    assert got == ProvisionAttempts("instance/b01", 1, AT, "t1", "1764583200")
    assert store.provision_attempts("east") == {"instance/b01": got}
    assert store.provision_attempts("west") == {}  # per site


def test_the_same_release_recorded_again_changes_nothing(store: StateStore) -> None:
    """A resumed apply (or a release retried after it failed) records the same instance."""
    first = store.record_provision_failure("east", "instance/b01", failures=1, template="t1",
                                           instance="i-1", at=AT)
    again = store.record_provision_failure("east", "instance/b01", failures=2, template="t1",
                                           instance="i-1", at=LATER)
    assert again == first
    assert store.provision_attempts("east")["instance/b01"].failures == 1


def test_the_next_instance_replaces_the_record(store: StateStore) -> None:
    store.record_provision_failure("east", "instance/b01", failures=1, template="t1",
                                   instance="i-1", at=AT)
    got = store.record_provision_failure("east", "instance/b01", failures=2, template="t1",
                                         instance="i-2", at=LATER)
    assert got == ProvisionAttempts("instance/b01", 2, LATER, "t1", "i-2")


def test_the_store_clock_dates_a_failure_by_default(store: StateStore) -> None:
    before = datetime.now(UTC).timestamp()
    got = store.record_provision_failure("east", "instance/b01", failures=1, template="t1",
                                         instance="i-1")
    assert before - 5 <= got.failed_at.timestamp() <= datetime.now(UTC).timestamp() + 5


def test_clearing_forgets_only_the_record_seen(store: StateStore) -> None:
    for entry in ("instance/b01", "instance/b02", "instance/b03"):
        store.record_provision_failure("east", entry, failures=1, template="t1",
                                       instance="i-1", at=AT)
    store.record_provision_failure("west", "instance/b01", failures=1, template="t1",
                                   instance="i-1", at=AT)
    # b02 failed again since the plan saw it (another instance): that record stays
    store.record_provision_failure("east", "instance/b02", failures=2, template="t1",
                                   instance="i-2", at=LATER)
    cleared = store.clear_provision_attempts(
        "east", {"instance/b01": "i-1", "instance/b02": "i-1", "instance/b09": "i-1"})
    assert cleared == 1
    assert sorted(store.provision_attempts("east")) == ["instance/b02", "instance/b03"]
    assert sorted(store.provision_attempts("west")) == ["instance/b01"]
    assert store.clear_provision_attempts("east", {}) == 0


def test_attempt_zero_is_no_failure(store: StateStore) -> None:
    with pytest.raises(ValueError, match="attempt 1 or later"):
        store.record_provision_failure("east", "instance/b01", failures=0, template="t1",
                                       instance="i-1")
