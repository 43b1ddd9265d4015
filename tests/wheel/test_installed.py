"""The installed wheel, used the way a site uses it: outside this repository, in a fresh venv,
with a site folder of another name (issue 10 §1: installed, it is complete)."""

from __future__ import annotations

import json
import shutil
import tomllib
import zipfile
from pathlib import Path

import pytest

from compiler.cmds.compile import main as compile_main
from tests.conftest import EXAMPLE_SITE
from tests.wheel.conftest import ROOT, Installed

pytestmark = [pytest.mark.wheel, pytest.mark.slow]

SCRIPTS = sorted(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"])
REPORTER = "      - supply.report\n      - supply.query\n"
POLICY_FILES = ("guardrails.yaml", "opcodes.yaml", "roles.yaml")
BUNDLED = "from compiler.core import bundled"  # where the installed package finds its data


def _in_venv(installed: Installed, code: str, cwd: Path) -> str:
    """What a line of Python prints in the fresh venv."""
    return installed.run(["python", "-c", code], cwd=cwd, check=True).stdout.strip()


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A copy of the example site in a folder not named site-config, outside any git repo."""
    shutil.copytree(EXAMPLE_SITE, tmp_path / "site")
    return tmp_path / "site"


def test_the_venv_imports_the_installed_package_not_this_checkout(
    installed: Installed, tmp_path: Path
) -> None:
    code = "import compiler, reconciler; print(compiler.__file__, reconciler.__file__)"
    for module_file in map(Path, _in_venv(installed, code, tmp_path).split()):
        assert module_file.is_relative_to(installed.venv / "lib"), module_file
        assert not module_file.resolve().is_relative_to(ROOT), module_file


def test_the_wheel_holds_the_policies_example_and_schema(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    data = "compiler/_data/"
    assert {f"{data}policies/{name}" for name in POLICY_FILES} <= names
    assert f"{data}site-config.schema.json" in names
    example = {
        f"{data}site-config/{p.relative_to(ROOT / 'site-config').as_posix()}"
        for p in (ROOT / "site-config").rglob("*")
        if p.is_file() and not p.relative_to(ROOT / "site-config").parts[0].startswith(".")
    }
    assert example and example <= names
    # never the example's workdir or build output, and no data folder became a package
    assert not [n for n in names if "/.xce/" in n or n.startswith(f"{data}site-config/build/")]
    assert not [n for n in names if n.startswith(data) and n.endswith(".py")]


def test_a_copied_site_compiles_as_it_does_here(
    installed: Installed, site: Path, tmp_path: Path
) -> None:
    """The issue's reproduction: no policies/ beside the site, so the bundled ones are used,
    and the allowlists are those this repository compiles with its own policies/ folder."""
    done = installed.run(["xce-compile", "site", "--out", "build"], cwd=site.parent)
    assert done.returncode == 0, done.stderr
    here = tmp_path / "here"
    assert compile_main([str(EXAMPLE_SITE), "--out", str(here)]) == 0
    built = site.parent / "build"
    assert (built / "allowlists.json").read_bytes() == (here / "allowlists.json").read_bytes()
    manifest = json.loads((built / "manifest.json").read_text())
    assert manifest["policies"]["source"] == "bundled"
    assert (
        manifest["policies"]["files"]
        == json.loads((here / "manifest.json").read_text())["policies"]["files"]
    )


def _reporter(allowlists: Path) -> list[str]:
    document = json.loads(allowlists.read_text())
    return [o["name"] for o in document["roles"]["reporter"]["opcodes"]]


def test_policies_option_makes_other_allowlists(installed: Installed, site: Path) -> None:
    """--policies with a copy of the installed policies where the reporter may query hosts."""
    work = site.parent
    shipped = Path(_in_venv(installed, f"{BUNDLED}; print(bundled.policies_dir())", work))
    assert shipped.is_relative_to(installed.venv)
    ours = shutil.copytree(shipped, work / "our-policies")
    roles = ours / "roles.yaml"
    assert roles.read_text().count(REPORTER) == 1
    roles.write_text(roles.read_text().replace(REPORTER, REPORTER + "      - host.query\n"))
    args = ["xce-compile", "site", "--out"]
    installed.run([*args, "default"], cwd=work, check=True)
    installed.run([*args, "ours", "--policies", "our-policies"], cwd=work, check=True)
    assert "host.query" not in _reporter(work / "default" / "allowlists.json")
    assert "host.query" in _reporter(work / "ours" / "allowlists.json")


def test_policies_at_an_empty_folder_is_an_error_naming_it(
    installed: Installed, site: Path
) -> None:
    (site.parent / "no-policies-here").mkdir()
    done = installed.run(
        ["xce-compile", "site", "--out", "build", "--policies", "no-policies-here"], cwd=site.parent
    )
    assert done.returncode == 1
    assert "error[XCE011]: no policy files in 'no-policies-here'" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (site.parent / "build").exists()


def test_every_console_script_runs(installed: Installed, tmp_path: Path) -> None:
    assert "xce-compile" in SCRIPTS and "xce-init" in SCRIPTS
    for name in SCRIPTS:
        done = installed.run([installed.bin(name), "--help"], cwd=tmp_path)
        assert (name, done.returncode, done.stderr) == (name, 0, "")
        assert f"usage: {name}" in done.stdout


def test_the_printed_schema_is_the_shipped_file(installed: Installed, tmp_path: Path) -> None:
    printed = installed.run(["xce-compile", "--schema"], cwd=tmp_path, check=True).stdout
    shipped = Path(_in_venv(installed, f"{BUNDLED}; print(bundled.schema_file())", tmp_path))
    assert shipped.is_relative_to(installed.venv)
    assert printed == shipped.read_text(encoding="utf-8")
