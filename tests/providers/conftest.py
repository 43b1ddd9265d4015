"""Fixtures: the provider under test, from every factory in ``kit.SUBJECTS``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.providers.kit import SUBJECTS, Subject


@pytest.fixture(params=sorted(SUBJECTS))
def subject(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Subject]:
    made = SUBJECTS[request.param](tmp_path)
    try:
        yield made
    finally:
        made.transport.close()
