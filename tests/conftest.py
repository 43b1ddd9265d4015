"""Shared fixtures: the example site and a compile helper."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_SITE = ROOT / "site-config"


@pytest.fixture
def example_site() -> Path:
    return EXAMPLE_SITE
