"""Shared fixtures: the example site and JSON snapshots (helpers for requests: tests/helpers.py)."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from reconciler.providers.registry import BUILTINS

# The built-in providers, imported before any test. The package's pytest11 entry point makes
# pytest rewrite every module of the distribution (compiler, reconciler) on first import, and
# Python 3.11's compiler is not safe in two threads at once (SystemError: AST constructor
# recursion depth mismatch): a gather asking two providers would be the first to import them.
for _module, _ in BUILTINS.values():
    importlib.import_module(_module)

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


@pytest.fixture(params=[0o022, 0o000], ids=["umask 022", "umask 000"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """The process umask while a test runs: a usual one, and none at all (files made
    private must be so whatever the umask)."""
    old = os.umask(request.param)
    yield request.param
    os.umask(old)
