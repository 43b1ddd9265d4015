"""Fixtures: a controller-map provider on a real SQLite file in a temporary workdir."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from compiler.contract.provider_params import ControllerMapParams
from reconciler.providers.controller_map.provider import ControllerMapProvider
from tests.controller_map.cmap import Clock


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def provider(tmp_path: Path, clock: Clock) -> Iterator[ControllerMapProvider]:
    p = ControllerMapProvider("controller", ControllerMapParams(), tmp_path, now=clock)
    yield p
    p.close()
