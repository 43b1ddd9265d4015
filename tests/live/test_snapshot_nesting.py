"""A live map nested past what a decoder walks is a clear error naming the file, never an
internal error (issue 20 §5: a live entry nested 1,000 levels deep raised RecursionError)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compiler.core.problems import UserError
from reconciler.live import load_live_snapshot


def _snapshot(tmp_path: Path, depth: int) -> Path:
    nested = '{"a":' * depth + "{}" + "}" * depth
    entry = {"id": "host/cn001", "kind": "host", "state": "available", "source": "config",
             "provider": "controller"}
    body = json.dumps({"schema": 1, "entries": [entry]})
    path = tmp_path / "live.json"
    path.write_text(body.replace('"provider": "controller"',
                                 f'"provider": "controller", "spec": {{"x": {nested}}}'))
    return path


def test_a_live_map_nested_a_thousand_levels_deep_is_a_clear_error(tmp_path: Path) -> None:
    path = _snapshot(tmp_path, 1000)
    with pytest.raises(UserError) as caught:
        load_live_snapshot(path)
    (problem,) = caught.value.problems
    assert problem.where.file == str(path)
    assert "nested deeper than a map may be" in problem.message


def test_a_live_map_nested_a_little_is_read(tmp_path: Path) -> None:
    supply = load_live_snapshot(_snapshot(tmp_path, 50))
    assert list(supply.entries) == ["host/cn001"]
