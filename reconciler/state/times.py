"""Times as the store keeps them (epoch seconds, from one clock) and as it hands them out."""

from __future__ import annotations

from datetime import UTC, datetime


def to_time(epoch_seconds: float) -> datetime:
    return datetime.fromtimestamp(epoch_seconds, UTC)


def to_maybe_time(epoch_seconds: float | None) -> datetime | None:
    return None if epoch_seconds is None else to_time(epoch_seconds)
