"""Shared fixtures: the example site and JSON snapshots (helpers for requests: tests/helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

ROOT = Path(__file__).resolve().parent.parent
# A copy of the example site pinned for the tests: everything exact is asserted on it, never on
# site-config/, the example admins are invited to edit (tests/test_docs.py says how they relate).
EXAMPLE_SITE = ROOT / "tests" / "example_site"


@pytest.fixture
def example_site() -> Path:
    return EXAMPLE_SITE


@pytest.fixture
def snapshot_json(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    """A snapshot stored as JSON, so reviewed outputs read as the files they are."""
    return snapshot.use_extension(JSONSnapshotExtension)
