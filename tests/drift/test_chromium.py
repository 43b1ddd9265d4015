"""The HTML report in a real browser: headless Chromium (Debian's ``chromium``, which
scripts/test.sh installs where it is missing) opens the report xce-drift wrote for the
drifted world, takes a screenshot and dumps the DOM; the page says what the report holds,
and the screenshot is a page of text and tables, not a blank one."""

from __future__ import annotations

import shutil
import statistics
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.drift.conftest import Drift
from tests.drift.png import decode

pytestmark = pytest.mark.slow
WIDTH, HEIGHT = 1200, 900


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:  # never skipped: the test command installs it (scripts/test.sh)
        pytest.fail("chromium is not installed: run scripts/test.sh, which installs Debian's "
                    "'chromium' package, or apt-get install -y chromium", pytrace=False)
    return found


def browse(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
               f"--user-data-dir={profile}", "--force-device-scale-factor=1",
               f"--window-size={WIDTH},{HEIGHT}", *args, page.as_uri()]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def page_text(dom: str) -> str:
    parser = _Text()
    parser.feed(dom)
    return " ".join(" ".join(parser.parts).split())


def test_the_html_report_reads_in_a_real_browser(drift: Drift, tmp_path: Path) -> None:
    page = tmp_path / "drift.html"
    assert drift("--out", str(page)).code == 2
    shot = tmp_path / "drift.png"
    browse(page, tmp_path / "profile-1", f"--screenshot={shot}")
    text = page_text(browse(page, tmp_path / "profile-2", "--dump-dom").stdout)

    assert "Drift of site e2e" in text
    assert "7 findings: 1 missing, 2 differs, 2 not-corrected, 1 co-managed, 1 unknown." in text
    assert "Not notified yet: 7 new, 0 changed, 0 resolved" in text
    for shown in ("host/cn02", '"available" "drained"', "quota/shared/user/alice",
                  "16106127360 10737418240", "volume-dir/shared/bob", "available absent",
                  "xce-plan ", "--target volume/shared", "license/ansys@site",
                  "owned by site/west", "provider/cloud", "simulated outage of inventory",
                  "less than a minute"):
        assert shown in text, shown

    image = decode(shot.read_bytes())
    assert (image.width, image.height) == (WIDTH, HEIGHT)
    grey = [sum(image.pixel(x, y)) // 3 for y in range(0, HEIGHT, 3) for x in range(0, WIDTH, 3)]
    colours = {image.pixel(x, y) for y in range(0, HEIGHT, 5) for x in range(0, WIDTH, 5)}
    inked = sum(1 for g in grey if g < 200) / len(grey)
    assert statistics.pstdev(grey) > 10, "the screenshot is (nearly) one colour"
    assert len(colours) > 50 and 0.01 < inked < 0.5, (len(colours), inked)
    badges = {(185, 28, 28), (180, 83, 9), (29, 78, 216), (75, 85, 99), (15, 118, 110),
              (194, 65, 12), (124, 58, 237)}
    assert len(colours & badges) >= 4, "the drift badges are not painted"
