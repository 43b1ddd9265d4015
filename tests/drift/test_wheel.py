"""xce-drift installed from the wheel, on a site folder of another name outside this
repository, with a template of the site's own that extends the bundled one: the package
ships its templates and migrations, and the site's template is found beside its YAML."""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_SITE
from tests.wheel.conftest import Installed, installed

__all__ = ["installed"]
pytestmark = [pytest.mark.wheel, pytest.mark.slow]


def test_the_installed_xce_drift_reports_a_new_cluster(installed: Installed,
                                                       tmp_path: Path) -> None:
    site = tmp_path / "my-site"
    shutil.copytree(EXAMPLE_SITE, site)
    templates = site / "templates" / "drift"
    templates.mkdir(parents=True)
    (templates / "report.txt.j2").write_text(
        '{% extends "bundled/report.txt.j2" %}{% block footer %}Ask hpc-admins.\n{% endblock %}')
    run = installed.run(["xce-drift", "my-site", "--out", "report.html"], cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert "Drift of site hpc-east" in run.stdout and run.stdout.endswith("Ask hpc-admins.\n")
    assert "== volume-dir (" in run.stdout and "missing  volume-dir/" in run.stdout
    html = (tmp_path / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "Not notified yet" in html
    with closing(sqlite3.connect(site / ".xce" / "state.sqlite")) as db:
        (rows,) = db.execute("SELECT count(*) FROM drift_ledger").fetchone()
    assert rows > 3000  # every entry of the new cluster is missing
    again = installed.run(["xce-drift", "my-site", "--format", "json"], cwd=tmp_path)
    doc = json.loads(again.stdout)
    assert again.returncode == 2 and len(doc["since_last"]["new"]) == rows
    assert {f["since"] for f in doc["findings"]} == {doc["since_last"]["new"][0]["since"]}
