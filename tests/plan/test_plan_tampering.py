"""Issue 20 §1: a saved plan applies only what its config asks, and only as it was made.

The small site (controller map, directory provider) is planned with ``xce-plan --out``; the
plan file is then edited as someone who can write the file would edit it — the digest of
its body recomputed, and either the old signature kept (edited in transit) or a new one made
with the state store's own key (whoever has access to the store) or another key. Every such
plan is refused with its code, and nothing of it is applied: the live map (controller map,
directories, quotas) and the volume's folder are as they were.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import reconciler.cmds.apply as apply_cli
import reconciler.cmds.plan as plan_cli
from compiler.contract.build_files import STATE_FILE
from compiler.core.canonical import digest_of, dumps
from reconciler.pipeline import gather, load_desired
from reconciler.plan.signature import sign
from reconciler.state import open_store
from tests.apply.small_site import write_site

Body = dict[str, Any]
ALICE = "create:volume-dir/shared/alice"


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The small site in ``site/``, never applied, and its plan saved in ``plan.json``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("XCE_STATE_URL", raising=False)
    write_site(tmp_path / "site")
    assert plan_cli.main(["site", "--out", "plan.json"]) == 2
    return tmp_path


def _store_key(here: Path) -> bytes:
    with open_store(None, here / "site" / ".xce" / STATE_FILE) as store:
        return store.plan_key()


def _world(here: Path) -> tuple[dict[str, Any], list[tuple[str, int]]]:
    """What the providers hold (every entry's JSON) and the volume's folders with modes."""
    live = gather(load_desired(here / "site", None), here / "site" / ".xce").supply
    fs = here / "site" / ".xce" / "fs"
    tree = sorted((str(p.relative_to(fs)), p.stat().st_mode & 0o7777) for p in fs.rglob("*"))
    return {i: e.to_json() for i, e in live.entries.items()}, tree


def _edit(here: Path, change: Callable[[Body], None], key: bytes | None) -> None:
    """Change the plan file's body and recompute its digest; ``key``: sign it again."""
    path = here / "plan.json"
    doc = json.loads(path.read_bytes())
    change(doc["body"])
    doc["digest"] = digest_of(doc["body"])
    if key is not None:
        doc["signature"] = sign(key, doc["digest"])
    path.write_bytes(dumps(doc))


def _refused(here: Path, capsys: pytest.CaptureFixture[str], code: str) -> str:
    """Apply the plan: refused with ``code`` (exit 1), and nothing changed."""
    before = _world(here)
    capsys.readouterr()
    assert apply_cli.main(["plan.json"]) == 1
    err = capsys.readouterr().err
    assert f"error[{code}]" in err, err
    assert "Traceback" not in err
    assert _world(here) == before
    return err


def _action(body: Body, action_id: str) -> dict[str, Any]:
    found: dict[str, Any] = next(a for a in body["plan"]["actions"] if a["id"] == action_id)
    return found


def _copy(body: Body, action_id: str, old: str, new: str) -> None:
    """A new action made from ``action_id``'s by renaming ``old`` to ``new`` everywhere."""
    action = json.loads(json.dumps(_action(body, action_id)).replace(old, new))
    body["plan"]["actions"].append(action)
    body["plan"]["fingerprints"][action["entry"]] = "absent"


def _mode_0777(body: Body) -> None:
    _action(body, ALICE)["after"]["spec"]["mode"] = "0777"


def _user_dir(body: Body) -> None:
    _copy(body, ALICE, "alice", "mallory")


def _host(body: Body) -> None:
    _copy(body, "create:host/cn01", "cn01", "evil01")


def _counter(body: Body) -> None:
    _action(body, "create:counter/slots@host/cn01")["after"]["amount"] = 999999


EDITS = {
    "mode 0777": (_mode_0777, "'create volume-dir/shared/alice': the plan has "
                  'after.spec.mode = "0777", but its config asks "0700"'),
    "a user dir no config names": (_user_dir, "the plan asks to create "
                                   "volume-dir/shared/mallory, which its config does not "
                                   "ask: volume-dir/shared/mallory is not in the desired map"),
    "a host not in config": (_host, "the plan asks to create host/evil01, which its config "
                             "does not ask: host/evil01 is not in the desired map"),
    "counter 999999": (_counter, "'create counter/slots@host/cn01': the plan has "
                       "after.amount = 999999, but its config asks 8"),
}


@pytest.mark.parametrize("edit", EDITS, ids=list(EDITS))
def test_a_plan_edited_in_transit_is_refused_by_its_signature(
        here: Path, capsys: pytest.CaptureFixture[str], edit: str) -> None:
    """Today's attack: the body edited and its sha256 recomputed; no key, so the signature
    made by xce-plan no longer matches."""
    _edit(here, EDITS[edit][0], key=None)
    err = _refused(here, capsys, "XCE773")
    assert "signature does not match the key of site/.xce/state.sqlite" in err


@pytest.mark.parametrize("edit", EDITS, ids=list(EDITS))
def test_a_plan_signed_again_with_the_store_key_must_still_be_what_its_config_asks(
        here: Path, capsys: pytest.CaptureFixture[str], edit: str) -> None:
    """Whoever can read the store can sign: the actions are checked against the config."""
    change, message = EDITS[edit]
    _edit(here, change, key=_store_key(here))
    err = _refused(here, capsys, "XCE774")
    assert message in " ".join(err.split()), err


def test_a_plan_signed_with_another_key_is_refused(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _edit(here, lambda body: None, key=os.urandom(32))
    _refused(here, capsys, "XCE773")


def test_an_unsigned_plan_is_refused_saying_make_it_again(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = here / "plan.json"
    doc = json.loads(path.read_bytes())
    del doc["signature"]
    path.write_bytes(dumps(doc))
    err = _refused(here, capsys, "XCE773")
    assert "the plan file is not signed" in err and "xce-plan --out" in err


def test_a_plan_of_the_unsigned_format_says_plan_again(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Version 2, before plans were signed: refused when read, with how to fix it."""
    doc = json.loads((here / "plan.json").read_bytes())
    body = {k: v for k, v in doc["body"].items() if k not in ("instance", "planned_at")}
    (here / "plan.json").write_bytes(dumps({"format": "xce-plan", "version": 2,
                                            "digest": digest_of(body), "body": body}))
    err = _refused(here, capsys, "XCE769")
    assert "format version 2" in err and "signed" in err and "xce-plan --out" in err


def test_a_wrongly_typed_field_is_refused_before_the_apply_starts(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``"revision": 12`` once applied the whole plan, then crashed in the report."""
    _edit(here, lambda body: body["plan"].update(revision=12), key=_store_key(here))
    err = _refused(here, capsys, "XCE764")
    assert "plan.revision must be a string or null, not a number" in err
    _edit(here, lambda body: body["plan"].update(revision="abc"), key=_store_key(here))
    _edit(here, lambda body: _action(body, ALICE).update(entry=7), key=_store_key(here))
    err = _refused(here, capsys, "XCE764")
    assert f"plan.actions[{_index(here, ALICE)}].entry must be a string, not a number" in err


def _index(here: Path, action_id: str) -> int:
    actions = json.loads((here / "plan.json").read_bytes())["body"]["plan"]["actions"]
    return next(i for i, a in enumerate(actions) if a["id"] == action_id)


def test_the_plan_as_made_applies(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The control: the same plan, untouched, applies (and its key was never printed)."""
    key = _store_key(here).hex()
    capsys.readouterr()
    assert apply_cli.main(["plan.json"]) == 0
    out, err = capsys.readouterr()
    assert key not in out + err + (here / "plan.json").read_text()
    assert (here / "site" / ".xce" / "fs" / "shared" / "xce" / "alice").is_dir()


def _drop_bob(site: Path) -> None:
    """bob leaves the config (user directories may be removed, with --destroy) and alice's
    quota grows (an action to apply)."""
    for name, old, new in (("storage.yaml", "users: [alice, bob]", "users: [alice]"),
                           ("storage.yaml", "{alice: 1TiB, bob: 2TiB}", "{alice: 2TiB}"),
                           ("site.yaml", "  discovery: report\n", "  discovery: report\n"
                            "  management: {volume-dir: correct-destructive}\n")):
        path = site / name
        assert old in path.read_text()
        path.write_text(path.read_text().replace(old, new))


@pytest.mark.parametrize("signed", [False, True], ids=["edited in transit", "signed again"])
def test_destroy_turned_on_in_a_plan_made_without_it_is_refused(
        here: Path, capsys: pytest.CaptureFixture[str], signed: bool) -> None:
    assert apply_cli.main(["site", "--auto-approve"]) == 0
    _drop_bob(here / "site")
    capsys.readouterr()
    assert plan_cli.main(["site", "--out", "plan.json"]) == 2
    assert "deleting users' data needs the destroy permission" in capsys.readouterr().out
    _edit(here, lambda body: body.update(destroy=True), _store_key(here) if signed else None)
    err = _refused(here, capsys, "XCE775" if signed else "XCE773")
    if signed:
        assert "the plan grants the destroy permission, but it was made without it" in err
        assert "volume-dir/shared/bob" in err
    assert (here / "site" / ".xce" / "fs" / "shared" / "xce" / "bob").is_dir()
