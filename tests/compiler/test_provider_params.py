"""A typo is never silent: each built-in provider kind's params are checked by one model.

The reproduction: ``cache_root:`` renamed ``cache_rot:`` in a dataset-copy provider of the
example site compiled with exit 0, went into ``bindings.json`` as written, and the provider
silently used its default cache folder. Now every param of every built-in kind is known to
the compiler (a misspelling is XCE101 at its line, with the nearest param), what the
compiler lets through starts the real provider, and the models' defaults are the
providers' own.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, get_args

import pytest

from compiler.cmds.compile import main
from compiler.compile import compile_site, located
from compiler.contract.bindings import Bindings
from compiler.contract.provider_params import (
    BUILTIN_KINDS,
    BUILTIN_PARAMS,
    EXTERNAL_KINDS,
    PROVIDER_KINDS,
    site_relative_fields,
)
from compiler.core.problems import Problems
from compiler.model.providers import Provider
from reconciler.protocol import ErrorCode, ProviderError, Request
from reconciler.providers import registry
from reconciler.providers.controller_map.provider import ControllerMapProvider
from reconciler.providers.dataset_copy import DatasetCopyProvider
from reconciler.providers.directory import DirectoryProvider

# The least each kind needs, as a site writes it.
REQUIRED: dict[str, dict[str, Any]] = {
    "directory": {},
    "dataset-copy": {"location": "group/gpu"},
    "controller-map": {},
}
# Every param set, in the forms the language allows (units, durations).
EVERY: dict[str, dict[str, Any]] = {
    "directory": {"base": "fs", "volumes": {"home": "/home"}, "quota_backend": "command",
                  "quota_command": ["true", "{subject}", "{kib}", "{path}"],
                  "quota_timeout": "90s"},
    "dataset-copy": {"location": "group/gpu", "cache_root": "caches/gpu",
                     "source_base": "data", "capacity": "1TiB"},
    "controller-map": {"path": "maps/controller.sqlite"},
}
SITE = """version: 1
site: {name: t}
host_groups: [{name: gpu, hosts: "gn[01-02]"}]
"""


def _site(tmp_path: Path, kind: str, params: dict[str, Any]) -> Path:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "site.yaml").write_text(SITE)
    lines = [f"      {key}: {json.dumps(value)}" for key, value in params.items()]
    body = "\n".join(["    params:", *lines]) if lines else "    params: {}"
    proxy = "" if kind == "controller-map" else "proxies: [{name: p, host: adm01, active: [x]}]\n"
    (site / "providers.yaml").write_text(
        f"version: 1\nproviders:\n  - name: x\n    kind: {kind}\n{body}\n{proxy}")
    return site


def _problems(site: Path) -> list[tuple[str, int | None, str, str]]:
    problems = Problems()
    _, files = compile_site(site, problems)
    return [(p.code, p.line, p.message, p.hint) for p in located(problems, files)]


def test_the_reproduction_cache_rot_fails_the_compile(
    example_site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = tmp_path / "site-config"
    shutil.copytree(example_site, site, ignore=shutil.ignore_patterns(".xce"))
    providers = site / "providers.yaml"
    text = providers.read_text()
    line = text[: text.index("cache_root: caches/gpu")].count("\n") + 1
    providers.write_text(text.replace("cache_root: caches/gpu", "cache_rot: caches/gpu"))
    assert main([str(site), "--out", str(tmp_path / "build")]) == 1
    out = "".join(capsys.readouterr())
    assert f"providers.yaml:{line}:7: error[XCE101]: unknown key 'cache_rot'" in out
    assert "did you mean 'cache_root'?" in out
    assert not (tmp_path / "build" / "bindings.json").exists()


def _misspelt(name: str) -> str:
    return name[:-2] + name[-1] if len(name) > 3 else name + "x"


@pytest.mark.parametrize(
    ("kind", "param"), [(k, p) for k, m in BUILTIN_PARAMS.items() for p in m.model_fields]
)
def test_every_param_of_every_kind_misspelt_is_an_error_at_its_line(
    kind: str, param: str, tmp_path: Path
) -> None:
    params = dict(EVERY[kind])
    params[_misspelt(param)] = params.pop(param)
    if param == "quota_command":
        params["quota_backend"] = "ledger"  # else its absence is a second, true error
    found = _problems(_site(tmp_path, kind, params))
    line = 6 + list(params).index(_misspelt(param))
    unknown = [(code, at) for code, at, message, _ in found if code == "XCE101"]
    assert unknown == [("XCE101", line)], found
    hints = [hint for code, _, _, hint in found if code == "XCE101"]
    assert hints == [f"did you mean '{param}'?"], found
    if param == "location":  # the one required param is missing now, at the params
        assert ("XCE105", 6) in [(code, at) for code, at, _, _ in found], found


@pytest.mark.parametrize("kind", BUILTIN_KINDS)
def test_what_compiles_starts_the_real_provider(kind: str, tmp_path: Path) -> None:
    """bindings.json carries the params as validated (1TiB as bytes, 90s as seconds), and
    the provider starts from them."""
    site = _site(tmp_path, kind, EVERY[kind])
    (site / "data").mkdir()
    assert main([str(site), "--out", str(tmp_path / "build")]) == 0
    bindings = json.loads((tmp_path / "build" / "bindings.json").read_text())
    params = bindings["providers"]["x"]["params"]
    assert set(params) == set(EVERY[kind])
    assert params.get("capacity", 2**40) == 2**40 and params.get("quota_timeout", 90) == 90
    transport = registry.open_provider("x", bindings["providers"]["x"], tmp_path / "work")
    try:
        assert transport.call(Request(verb="info")).ok
    finally:
        transport.close()


def _started(kind: str, written: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """What a provider made of its params (read by the model, as the registry reads them),
    workdir-relative."""
    params: Any = BUILTIN_PARAMS[kind].model_validate(written)
    if kind == "directory":
        d = DirectoryProvider("x", params, workdir)
        seen = {"base": d.base.relative_to(workdir), "volumes": d.configured,
                "timeout": d.quota_command.timeout if d.quota_command else None}
        d.close()
    elif kind == "dataset-copy":
        c = DatasetCopyProvider("x", params, workdir)
        seen = {"root": c.cache_root.relative_to(workdir), "limit": c.limit,
                "sources": c.source_base.relative_to(workdir), "location": c.location}
        c.close()
    else:
        seen = {"map": ControllerMapProvider("x", params, workdir).map_file.relative_to(workdir)}
    return seen


@pytest.mark.parametrize("kind", BUILTIN_KINDS)
def test_the_models_defaults_are_the_providers_defaults(kind: str, tmp_path: Path) -> None:
    """A param left out means the same to the compiler's model and to the provider."""
    written = dict(REQUIRED[kind])
    if kind == "directory":  # so that quota_timeout's default is read
        written |= {"quota_backend": "command", "quota_command": ["true"]}
    model = BUILTIN_PARAMS[kind].model_validate(written)
    defaults = model.model_dump(mode="json", exclude_none=True)
    if kind == "directory":  # the model's own defaults are in play, not only absences
        assert {"base", "quota_timeout", "volumes"} <= set(defaults)
    assert _started(kind, written, tmp_path / "a") == _started(kind, defaults, tmp_path / "b")


def test_the_kinds_are_listed_once() -> None:
    """The compiler's list is the one; the language, the params models and the registry's
    implementations follow it."""
    assert set(BUILTIN_PARAMS) == set(BUILTIN_KINDS)
    assert (*BUILTIN_KINDS, *EXTERNAL_KINDS) == PROVIDER_KINDS
    assert get_args(Provider.model_fields["kind"].annotation) == PROVIDER_KINDS
    assert tuple(registry.BUILTINS) == BUILTIN_KINDS


@pytest.mark.parametrize("kind", BUILTIN_KINDS)
def test_every_builtin_kind_rejects_an_unknown_param_at_its_position(
    kind: str, tmp_path: Path
) -> None:
    """Over the one list of kinds, so a new kind is covered: an unknown param is XCE101 at
    its line and column (whatever else its kind requires), and the reconciler refuses it
    too in a hand-edited bindings.json, naming the provider and the param."""
    site = _site(tmp_path, kind, {"no_such_param": 1})
    problems = Problems()
    _, files = compile_site(site, problems)
    unknown = [(p.line, p.column, p.message) for p in located(problems, files)
               if p.code == "XCE101"]
    assert unknown == [(6, 7, "unknown key 'no_such_param'")], unknown
    binding = {"kind": kind, "params": {**REQUIRED[kind], "no_such_param": 1}}
    with pytest.raises(ProviderError) as err:
        registry.open_provider("x", binding, tmp_path / "work")
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    assert err.value.message.startswith("provider 'x' param no_such_param: "), err.value.message
    assert not (tmp_path / "work").exists()  # refused before the provider made any state


@pytest.mark.parametrize(
    ("kind", "param"),
    [(k, f) for k, m in BUILTIN_PARAMS.items() for f in site_relative_fields(m)],
)
def test_site_relative_params_resolve_against_the_site(
    kind: str, param: str, tmp_path: Path
) -> None:
    """Each param marked SiteRelative, whatever its kind: a relative one is under the site
    folder, an absolute one stays; one not marked stays relative (to the workdir)."""
    site = tmp_path / "site"
    for value, expected in (("data", str((site / "data").resolve())), ("/abs", "/abs")):
        doc = {"providers": {"x": {"kind": kind, "params": {**EVERY[kind], param: value}}}}
        at_site = Bindings.from_json(doc, site).binding("x").params.model_dump()
        as_written = Bindings.from_json(doc).binding("x").params.model_dump()
        assert at_site.pop(param) == expected and as_written.pop(param) == value
        assert at_site == as_written  # cache_root and the like stay relative to the workdir


@pytest.mark.parametrize("kind", BUILTIN_KINDS)
def test_the_reader_reads_what_the_writer_wrote(kind: str, tmp_path: Path) -> None:
    """bindings.json is one format: each compiled binding read back and written again is
    the same document, and its params are the kind's model."""
    site = _site(tmp_path, kind, EVERY[kind])
    (site / "data").mkdir()
    assert main([str(site), "--out", str(tmp_path / "build")]) == 0
    doc = json.loads((tmp_path / "build" / "bindings.json").read_text())
    bindings = Bindings.from_json(doc)
    for name in bindings.names:
        binding = bindings.binding(name)
        assert binding.to_json() == doc["providers"][name]
    assert bindings.to_json() == doc  # the proxies too
    assert isinstance(bindings.binding("x").params, BUILTIN_PARAMS[kind])


def test_external_params_stay_as_written(tmp_path: Path) -> None:
    """An exec or jsonl provider's program reads its params: any key, any nesting."""
    site = _site(tmp_path, "exec", {"region": "eu-1", "tags": {"team": "hpc"}, "cap": "1TiB"})
    text = (site / "providers.yaml").read_text().replace("kind: exec", "kind: exec\n"
                                                         "    command: [cloud]")
    (site / "providers.yaml").write_text(text)
    assert main([str(site), "--out", str(tmp_path / "build")]) == 0
    bindings = json.loads((tmp_path / "build" / "bindings.json").read_text())
    assert bindings["providers"]["x"]["params"] == {"region": "eu-1", "tags": {"team": "hpc"},
                                                    "cap": "1TiB"}
