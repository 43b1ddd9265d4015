"""Shared fixtures: the example site and JSON snapshots (helpers for requests: tests/helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_SITE = ROOT / "site-config"


@pytest.fixture
def example_site() -> Path:
    return EXAMPLE_SITE


@pytest.fixture
def snapshot_json(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    """A snapshot stored as JSON, so reviewed outputs read as the files they are."""
    return snapshot.use_extension(JSONSnapshotExtension)
