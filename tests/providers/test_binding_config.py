"""An external provider receives its binding's params as ``config`` in every request; the
typed bindings read what xce-compile wrote, or refuse it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from compiler.contract.bindings import Bindings
from compiler.contract.supply_map import SupplyMap
from compiler.core.problems import UserError
from reconciler.live import gather_live
from reconciler.pipeline import load_compiled
from reconciler.protocol import Request
from reconciler.providers.registry import open_bound, open_provider

ECHO = """
import json, os, sys
req = json.loads(sys.stdin.read())
print(json.dumps({"ok": True, "result": {"config": req.get("config"), "cwd": os.getcwd()}}))
"""


def test_exec_provider_gets_config_and_runs_in_its_state_folder(tmp_path: Path) -> None:
    script = tmp_path / "echo.py"
    script.write_text(ECHO)
    binding = {"kind": "exec", "command": [sys.executable, str(script)],
               "params": {"region": "eu-1", "tags": {"team": "hpc"}}}
    reply = open_provider("cloud", binding, tmp_path / "work").call(Request("probe"))
    assert reply.ok
    assert reply.result["config"] == {"region": "eu-1", "tags": {"team": "hpc"}}
    assert Path(reply.result["cwd"]) == (tmp_path / "work" / "providers" / "cloud").resolve()


def test_a_request_without_binding_params_carries_no_config(tmp_path: Path) -> None:
    script = tmp_path / "echo.py"
    script.write_text(ECHO)
    binding = {"kind": "exec", "command": [sys.executable, str(script)]}
    reply = open_provider("cloud", binding, tmp_path).call(Request("probe"))
    assert reply.result["config"] is None


def test_external_params_stay_free_form_through_the_typed_bindings(tmp_path: Path) -> None:
    """Only built-in kinds have a params model: an external provider's params are read as
    written (any key, any nesting), and a key named like a site-relative param of a built-in
    kind is not resolved against the site."""
    script = tmp_path / "echo.py"
    script.write_text(ECHO)
    params = {"source_base": "data", "tags": {"team": "hpc"}, "no_model": [1, "two"]}
    doc = {"providers": {"cloud": {"kind": "exec", "command": [sys.executable, str(script)],
                                   "params": params}}}
    bindings = Bindings.from_json(doc, tmp_path / "site")
    assert bindings.binding("cloud").params == params
    reply = open_bound(bindings, "cloud", tmp_path / "work").call(Request("probe"))
    assert reply.ok and reply.result["config"] == params


@pytest.mark.parametrize(
    ("written", "fragment"),
    [(b"[]", "no 'providers' object"), (b'{"proxies": {}}', "no 'providers' object"),
     (b"{", "not valid JSON"),
     (b'{"providers": {}, "proxies": {"p": {"active": ["x"]}}}', "proxy 'p' without a 'host'")],
)
def test_compiled_bindings_that_are_not_bindings_are_refused_naming_the_file(
    tmp_path: Path, written: bytes, fragment: str
) -> None:
    """A bindings.json that is not one (a list crashed the loader; no 'providers' left every
    provider unbound, so nothing was known) stops the plan with XCE780, not a traceback."""
    (tmp_path / "supply-map.json").write_bytes(SupplyMap(entries={}).dumps())
    (tmp_path / "bindings.json").write_bytes(written)
    with pytest.raises(UserError) as err:
        load_compiled(tmp_path / "supply-map.json")
    [problem] = err.value.problems
    assert problem.code == "XCE780" and fragment in problem.message, problem
    assert problem.subject == str(tmp_path / "bindings.json")


def test_a_bad_binding_makes_only_its_provider_unknown(tmp_path: Path) -> None:
    """One provider's unusable binding (an unknown param) is that provider's XCE700; the
    others are asked."""
    doc = {"providers": {"bad": {"kind": "directory", "params": {"bsae": "fs"}},
                         "controller": {"kind": "controller-map", "params": {}}}}
    result = gather_live(Bindings.from_json(doc), tmp_path, "site/t")
    assert list(result.live.unknown) == ["bad"]
    assert [(p.code, p.subject) for p in result.problems] == [("XCE700", "bad")]
    assert "param bsae: Extra inputs are not permitted" in result.live.unknown["bad"]
