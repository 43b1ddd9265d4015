"""Issue 10 §4: a saved plan carries where it was made (site folder, workdir, state store).

``xce-apply PLAN`` in the folder the plan was made in needs no other option, the command
``xce-plan --out`` prints runs as printed, and a plan applied against another workdir or
state store is refused with one error naming both, never a list of stale entries.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import reconciler.cmds.apply as apply_cli
import reconciler.cmds.plan as plan_cli
from compiler.cmds.compile import main as compile_main
from compiler.core.canonical import digest_of, dumps
from reconciler.state import open_store
from reconciler.state.urls import without_password
from tests.apply.small_site import raise_quotas, write_site
from tests.state.conftest import pg_admin, pg_target, sqlite_target, target  # noqa: F401
from tests.state.targets import Target

APPLY = str(Path(sys.executable).with_name("xce-apply"))


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A site repository's folder with the small site in ``site/`` (not site-config)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("XCE_STATE_URL", raising=False)
    write_site(tmp_path / "site")
    return tmp_path


def _plan(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = plan_cli.main(["site", "--out", "plan.json", *args])
    return code, capsys.readouterr().err


def _apply(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = apply_cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _applied_then_changed(here: Path, capsys: pytest.CaptureFixture[str], *args: str) -> None:
    """Apply the site, change it, and save the plan of the change (it updates fingerprinted
    entries, which another workdir or store would report as 'changed since the plan')."""
    assert _plan(capsys, *args)[0] == 2
    assert _apply(capsys, "plan.json")[0] == 0
    raise_quotas(here / "site")
    assert _plan(capsys, *args)[0] == 2


def _only_problem(err: str, code: str) -> str:
    """The one error of the run: ``code`` (and no stale entry: XCE822)."""
    assert err.count("error[") == 1 and f"error[{code}]" in err, err
    assert "XCE822" not in err
    return err


def test_the_printed_command_runs_as_printed(here: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _plan(capsys)
    assert code == 2
    printed = err.rsplit("apply it with: ", 1)[1].strip()
    assert printed == "xce-apply plan.json"
    done = subprocess.run([APPLY, *shlex.split(printed)[1:]], cwd=here, capture_output=True,
                          text=True, check=False)
    assert (done.returncode, done.stderr.count("error[")) == (0, 0), done.stderr
    assert "Applied plan" in done.stdout and "19 done" in done.stdout
    assert plan_cli.main(["site"]) == 0  # nothing left to do


def test_the_printed_command_keeps_the_policies_it_was_planned_with(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The plan does not hold the policy folder; the printed command names it, so it still
    compiles the site as the plan did (a site policy may name roles only that folder has)."""
    shutil.copytree(Path(__file__).parents[2] / "policies", here / "own policies")
    code, err = _plan(capsys, "--policies", "own policies")
    assert code == 2
    printed = err.rsplit("apply it with: ", 1)[1].strip()
    assert printed == "xce-apply plan.json --policies 'own policies'"
    (here / "own policies" / "roles.yaml").write_text("version: 1\nroles: [\n")
    refused = subprocess.run([APPLY, *shlex.split(printed)[1:]], cwd=here, capture_output=True,
                             text=True, check=False)
    assert refused.returncode == 1 and "own policies/roles.yaml" in refused.stderr


def test_the_plan_keeps_a_workdir_and_store_of_its_own(here: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _plan(capsys, "--workdir", "work", "--state", "state/xce.sqlite")
    assert code == 2 and err.endswith("apply it with: xce-apply plan.json\n")
    assert _apply(capsys, "plan.json")[0] == 0
    assert (here / "work" / "providers" / "controller").is_dir()
    assert not (here / "site" / ".xce").exists()
    with open_store("state/xce.sqlite", Path("unused")) as store:
        assert store.get_applied("small") is not None


def test_a_plan_of_a_compiled_map_names_it(here: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert compile_main(["site", "--out", "build"]) == 0
    capsys.readouterr()
    assert plan_cli.main(["--desired", "build/supply-map.json", "--out", "plan.json"]) == 2
    assert _apply(capsys, "plan.json")[0] == 0
    assert (here / "build" / ".xce" / "providers").is_dir()  # beside the map, as planned


def test_from_another_folder_the_site_is_named(here: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    assert _plan(capsys)[0] == 2
    elsewhere = here / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code, _, err = _apply(capsys, "../plan.json")
    assert code == 1
    _only_problem(err, "XCE766")
    assert f"made in {here} from the site folder 'site'" in err
    assert f"{elsewhere / 'site'} does not exist" in err


def test_another_workdir_is_refused_naming_both(here: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    _applied_then_changed(here, capsys)
    code, out, err = _apply(capsys, "plan.json", "--workdir", "other", "--format", "json")
    assert code == 1
    _only_problem(err, "XCE767")
    assert "this apply's workdir is 'other'" in err and "the workdir 'site/.xce'" in err
    (problem,) = json.loads(out)["problems"]
    assert problem["code"] == "XCE767"
    assert not (here / "other").exists()  # nothing was asked of the providers there


def test_a_missing_workdir_is_named_not_every_entry(here: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's 48 × XCE822: the workdir (providers' state, store) is not in the repo."""
    _applied_then_changed(here, capsys)
    shutil.move(here / "site" / ".xce", here / "kept")
    code, _, err = _apply(capsys, "plan.json")
    assert code == 1
    _only_problem(err, "XCE767")
    assert "the workdir 'site/.xce', which held the embedded providers' state" in err
    assert not (here / "site" / ".xce").exists()
    shutil.move(here / "kept", here / "site" / ".xce")
    assert _apply(capsys, "plan.json")[0] == 0  # where it was made, it applies


def test_another_copy_of_the_site_is_refused_by_its_store(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A wrong --site that compiles the same: its workdir holds another store."""
    _applied_then_changed(here, capsys)
    shutil.copytree(here / "site", here / "copy", ignore=shutil.ignore_patterns(".xce"))
    assert _apply(capsys, "copy", "--auto-approve")[0] == 0  # a workdir and store of its own
    code, _, err = _apply(capsys, "plan.json", "--site", "copy")
    assert code == 1
    _only_problem(err, "XCE768")
    assert "copy/.xce/state.sqlite (store " in err and "site/.xce/state.sqlite (store " in err


def test_a_store_that_does_not_exist_is_not_made(here: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    _applied_then_changed(here, capsys)
    code, _, err = _apply(capsys, "plan.json", "--state", "new.sqlite")
    assert code == 1
    _only_problem(err, "XCE768")
    assert "new.sqlite (a new store: there is none there yet)" in err
    assert not (here / "new.sqlite").exists()


def test_a_plan_made_before_any_store_makes_the_default_and_applies_only_there(
        here: Path, capsys: pytest.CaptureFixture[str], target: Target,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    """xce-plan --out makes the default store, whose key signs the plan (a plain xce-plan
    still makes none); the plan names that store and applies only there."""
    assert plan_cli.main(["site"]) == 2 and not (here / "site/.xce/state.sqlite").exists()
    assert _plan(capsys)[0] == 2
    assert (here / "site/.xce/state.sqlite").exists()
    monkeypatch.setenv("XCE_STATE_URL", target.url)
    code, _, err = _apply(capsys, "plan.json")
    assert code == 1
    _only_problem(err, "XCE768")
    assert "against site/.xce/state.sqlite (store " in err
    monkeypatch.delenv("XCE_STATE_URL")
    assert _apply(capsys, "plan.json")[0] == 0


def test_the_plan_opens_the_store_it_was_made_against(
        here: Path, capsys: pytest.CaptureFixture[str], target: Target,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Planned with --state: the apply opens that store with no option, even when
    $XCE_STATE_URL names another; --state naming another is refused."""
    _applied_then_changed(here, capsys, "--state", target.url)
    with target.open() as store:
        planned_id = store.store_id
    body = json.loads((here / "plan.json").read_text())["body"]["origin"]["store"]
    assert body["id"] == planned_id and body["option"] == target.url
    other = here / "other.sqlite"
    with open_store(str(other), Path("unused")) as store:
        assert store.store_id != planned_id
    code, _, err = _apply(capsys, "plan.json", "--state", str(other))
    assert code == 1
    _only_problem(err, "XCE768")
    assert f"(store {planned_id[:12]})" in err and f"{other} (store " in err
    monkeypatch.setenv("XCE_STATE_URL", str(other))
    assert _apply(capsys, "plan.json")[0] == 0
    with target.open() as store:
        assert store.get_applied("small") is not None


def test_a_password_never_reaches_the_plan_file() -> None:
    """The plan keeps --state so the apply can open it; the driver gets the password from
    PGPASSWORD or a pgpass file then (docs/apply.md)."""
    url = "postgresql://xce:s3cret@db:5432/xce?sslmode=require&password=s3cret"
    assert without_password(url) == "postgresql://xce@db:5432/xce?sslmode=require"
    assert without_password("postgresql://xce@db/xce") == "postgresql://xce@db/xce"
    assert without_password("state/xce.sqlite") == "state/xce.sqlite"


def test_a_plan_of_the_previous_version_says_plan_again(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _plan(capsys)[0] == 2
    doc = json.loads((here / "plan.json").read_text())
    body = {k: v for k, v in doc["body"].items() if k != "origin"}
    (here / "old.json").write_bytes(dumps({"format": "xce-plan", "version": 1,
                                           "digest": digest_of(body), "body": body}))
    code, _, err = _apply(capsys, "old.json")
    assert code == 1
    _only_problem(err, "XCE769")
    assert "made by an older xce-gitops" in err and "xce-plan --out" in err


def test_a_store_keeps_the_id_it_drew(target: Target, tmp_path: Path) -> None:  # noqa: F811
    with target.open() as store:
        first = store.store_id
    with target.open() as store:
        assert store.store_id == first  # the same store, opened again
    with open_store(str(tmp_path / "another.sqlite"), Path("unused")) as other:
        assert other.store_id != first
    assert len(first) == 32 and int(first, 16) >= 0
