"""A secret a provider echoes is in no drift report and no ledger row.

The cloud account of tests/drift/secret_site is reached with an API token (a reference:
the value is in the environment) and its provider echoes the token back in the fields the
planner compares (tests/e2e/token_provider.py): under a secret key and inside a plain
value. xce-drift then reports those instances as differing — on SQLite and PostgreSQL,
in every format, on stderr and in every file — without the token.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from reconciler.render.drift import FORMATS, SUFFIXES
from tests.drift.world import make_site, run_drift
from tests.e2e.steps import run_steps
from tests.e2e.workspace import Workspace
from tests.state.targets import Target

TOKEN = "tok-7c1e9a-drift-canary-never-show"
TABLES = ("drift_ledger", "drift_history", "drift_sites", "locks")


pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def echoing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    """The secret site applied: from now on its cloud provider echoes the token."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        ws = make_site(tmp_path_factory.mktemp("canary"), "secret_site")
        run_steps(ws, [{"env": {"XCE_TEST_TOKEN": TOKEN}}, {"apply_site": True}], monkeypatch)
        yield ws


def test_the_echoed_token_is_in_no_report_and_no_ledger_row(
        echoing: Workspace, target: Target, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    ws = echoing
    suffix = {fmt: s for s, fmt in SUFFIXES.items()}
    shown: dict[str, str] = {}
    for fmt in FORMATS.names:
        out = tmp_path / f"report{suffix[fmt]}"
        run = run_drift(ws, capsys, monkeypatch, "--state", target.url, "--format", fmt,
                        "--out", str(out))
        assert run.code == 2, run.err
        shown.update({fmt: run.out, f"{fmt} stderr": run.err, f"{out.name}": out.read_text()})
    shown.update({table: repr(target.raw(f"SELECT * FROM {table}")) for table in TABLES})
    for where, text in shown.items():
        assert TOKEN not in text, f"the token leaked into the {where}"

    # the provider did echo it: the report shows where, masked
    found = {f["entry"]: f for f in orjson.loads(shown["json"])["findings"]}
    fields = {f["path"]: f["live"] for f in found["instance/burst01"]["fields"]}
    assert fields == {"attributes.api_token": "(sensitive)", "attributes.note": "key=(sensitive);"}
    assert "(sensitive)" in shown["drift_ledger"]
