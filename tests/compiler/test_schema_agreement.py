"""The editor schema accepts exactly what the compiler accepts, file by file.

Every file goes through both: the compiler's per-file stages, and the schema that
``xce-compile --schema`` prints (jsonschema, draft-07 as the schema declares and 2020-12,
which must agree). The schema sees what the compiler's own loader reads, YAML 1.2's core
schema as an editor reads it: ``yes``, ``1_000``, ``0b101`` and ``2024-01-01`` are text,
``0700`` the number 700. Per file:

- a file the schema rejects has a per-file error in the compiler, and
- each per-file error of the compiler has a schema error at its place (the same YAML path,
  or one inside the other: a missing key is reported at its mapping by both),

except for what a JSON Schema cannot say (docs/editors.md, "What the editor cannot tell
you"), listed in ``BEYOND_SCHEMA`` per corpus file and per spelling, each with the reason.

Per-file errors are those of loading and validating the file (XCE0xx, XCE1xx and the
names' XCE406), the checks that need only the file (``PER_FILE_CHECKS``) and the shape of
its ``policy:`` section. What needs the other files of the folder (references, names
defined twice, hosts in two groups, capacities, proxies: XCE204, XCE3xx, XCE401–XCE405,
XCE409–XCE411) and the policies' checks against the catalog are not the schema's.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ConfigDict, TypeAdapter, ValidationError

from compiler.compile import check_document
from compiler.contract.provider_params import Template
from compiler.core import codes
from compiler.core.forms import secret_key_pattern
from compiler.core.hostlist import HostlistError, expand
from compiler.core.problems import Problem, Problems
from compiler.core.secrets import is_reference, is_secret_key
from compiler.core.types import (
    DatasetName,
    Duration,
    HostlistKey,
    Label,
    Mode,
    Name,
    SafeName,
    SecretRef,
    Size,
)
from compiler.core.units import MAX_AMOUNT, SIZE_UNITS
from compiler.emit.schema import site_file_schema, value_schema
from compiler.model.document import build_document
from compiler.policy.site import read_site
from compiler.source.yaml_source import load_bytes
from tests.conftest import EXAMPLE_SITE

BROKEN = Path(__file__).parent / "broken"
SCHEMA = site_file_schema()


def _string_keys_only(
    keyword: Callable[..., Iterator[jsonschema.ValidationError]],
) -> Callable[..., Iterator[jsonschema.ValidationError]]:
    """A keyword that matches keys with ``patternProperties``' regexes, as for JSON, whose
    keys are text: YAML's other keys (``7:``, ``[a, b]:``) are ``propertyNames`` errors, and
    jsonschema's regex would raise on them."""

    def check(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        if isinstance(instance, dict) and "patternProperties" in schema:
            instance = {k: v for k, v in instance.items() if isinstance(k, str)}
        return keyword(validator, value, instance, schema)

    return check


def _validator(cls: Any) -> Any:
    names = ("patternProperties", "additionalProperties")
    keywords = {k: _string_keys_only(cls.VALIDATORS[k]) for k in names}
    extended = jsonschema.validators.extend(cls, keywords)  # type: ignore[no-untyped-call]
    return extended(SCHEMA, format_checker=cls.FORMAT_CHECKER)


VALIDATORS = tuple(
    _validator(cls) for cls in (jsonschema.Draft7Validator, jsonschema.Draft202012Validator)
)
# Checks of the check stage that look at one item of one file, never at another file.
PER_FILE_CHECKS = frozenset({
    codes.HOSTLIST_SYNTAX, codes.HOSTLIST_DESCENDING, codes.HOSTLIST_TOO_LARGE,
    codes.OVERRIDE_NOT_IN_GROUP, codes.TOO_FEW_HOSTS, codes.LITERAL_SECRET,
    codes.COMMAND_MISMATCH, codes.TOPOLOGY_GIVEN_TWICE,
})  # fmt: skip

YPath = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the compiler and the schema say about one file."""

    loaded: bool
    compiler: tuple[Problem, ...]  # the per-file errors
    schema: tuple[tuple[YPath, str], ...]  # each schema error's place and message

    def unmatched(self) -> list[Problem]:
        """The compiler's errors with no schema error at their place."""
        places = [path for path, _ in self.schema]
        return [p for p in self.compiler if not any(_related(_ypath(p), s) for s in places)]

    def shown(self) -> str:
        lines = [f"compiler {p.code} {'.'.join(_ypath(p))}: {p.message}" for p in self.compiler]
        lines += [f"schema   {'.'.join(path)}: {message}" for path, message in self.schema]
        return "\n".join(lines) or "(no problem either side)"


def _ypath(p: Problem) -> YPath:
    return tuple(str(part) for part in p.where.ypath) if p.where is not None else ()


def _related(a: YPath, b: YPath) -> bool:
    """One path is the other, or leads to it."""
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def judge(data: bytes, name: str = "site.yaml") -> Verdict:
    """Both verdicts on one file."""
    problems = Problems()
    source = load_bytes(data, name, problems)
    if source is None:  # not YAML: the schema never sees it (the editor shows the syntax error)
        return Verdict(False, tuple(problems.errors), ())
    document = build_document([source], problems)
    checks = Problems()
    check_document(document, checks)
    problems.extend(p for p in checks if p.code in PER_FILE_CHECKS)
    read_site([source], problems)
    places: dict[tuple[YPath, str], None] = {}
    for validator in VALIDATORS:
        for error in validator.iter_errors(source.data):
            places.update(dict.fromkeys(_leaves(error)))
    return Verdict(True, tuple(problems.errors), tuple(places))


def _leaves(error: jsonschema.ValidationError) -> Iterator[tuple[YPath, str]]:
    """An error's places. Of an ``anyOf``, the branches that fit the value's type: a size
    that is a malformed string is a string branch's error, not "not an integer"."""
    here = tuple(str(p) for p in error.absolute_path)
    if "propertyNames" in error.absolute_schema_path:  # a key's error: at the key
        here += (str(error.instance),)
    if error.validator in ("anyOf", "oneOf") and error.context:
        branches: dict[Any, list[jsonschema.ValidationError]] = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        fitting = [
            errs
            for errs in branches.values()
            if not any(e.validator == "type" and len(e.absolute_path) == len(here) for e in errs)
        ]
        if fitting:
            for errs in fitting:
                for sub in errs:
                    yield from _leaves(sub)
            return
    yield here, error.message


def assert_agree(verdict: Verdict, beyond: frozenset[str] = frozenset()) -> None:
    """The two agree; ``beyond``: the places (dotted YAML paths) of the compiler errors
    that the schema cannot express, exactly those."""
    if not verdict.loaded:
        assert verdict.compiler, "a file that does not load is an error"
        return
    if verdict.schema:
        assert verdict.compiler, "the schema rejects what the compiler accepts:\n" + verdict.shown()
    unmatched = {".".join(_ypath(p)) for p in verdict.unmatched()}
    assert unmatched == beyond, (
        "compiler errors the schema does not report (or listed as beyond it, yet reported):\n"
        + verdict.shown()
    )


# --- the broken corpus and the example site ----------------------------------------------

# Corpus files with compiler errors a JSON Schema cannot say, at these places.
BEYOND_SCHEMA: dict[str, dict[str, str]] = {
    "hostlist-descending/hosts.yaml": {
        "host_groups.0.hosts": "a range's bounds compared (XCE202)",
    },
    "hostlist-too-large/hosts.yaml": {"host_groups.0.hosts": "a range's size counted (XCE203)"},
    "override-not-in-group/hosts.yaml": {
        "host_groups.0.overrides.cn[0007-0010]": "two hostlists compared (XCE205)",
    },
    "provisioned-over-hostlist/hosts.yaml": {
        "host_groups.0.provisioned.count": "a count compared with a hostlist's size (XCE206)",
        "host_groups.1.provisioned.max": "the same, for max",
        "host_groups.2.provisioned.min": "the same, for min",
    },
    "bad-values/hosts.yaml": {"host_groups.2.provisioned": "min compared with max"},
    "names-too-long/storage.yaml": {
        "quotas.0.users." + "é" * 128: "a name's length in UTF-8 bytes, not in characters",
        "host_groups.0.hosts": "the length of the names a hostlist makes",
    },
    "numbers-too-large/hosts.yaml": {
        "host_groups.0.counters.mem": "a size's value past 2^63 - 1 (the schema checks its form)",
    },
    "size-fraction/site.yaml": {"pools.storage.0.capacity": "a fraction of a byte"},
    "size-too-large/site.yaml": {"pools.storage.0.capacity": "a size's value past 2^63 - 1"},
    "params-not-plain-data/providers.yaml": {
        "providers.2.params": "a whole number past 64 bits: JSON has one number type, and a "
        "float that large is fine",
    },
}


def _corpus_files() -> Iterator[Any]:
    for path in sorted(BROKEN.rglob("*")):
        if path.suffix in (".yaml", ".yml") and path.name != "expected.yaml":
            name = str(path.relative_to(BROKEN))
            yield pytest.param(path, id=name)


@pytest.mark.parametrize("path", list(_corpus_files()))
def test_corpus_file(path: Path) -> None:
    name = str(path.relative_to(BROKEN))
    assert_agree(judge(path.read_bytes(), path.name), frozenset(BEYOND_SCHEMA.get(name, {})))


def test_beyond_schema_names_corpus_files() -> None:
    """A stale entry (a renamed case) would excuse nothing and hide nothing: refuse it."""
    assert all((BROKEN / name).is_file() for name in BEYOND_SCHEMA)


@pytest.mark.parametrize(
    "path", sorted(EXAMPLE_SITE.rglob("*.yaml")), ids=lambda p: str(p.relative_to(EXAMPLE_SITE))
)
def test_example_file(path: Path) -> None:
    verdict = judge(path.read_bytes(), path.name)
    assert verdict.loaded and not verdict.compiler and not verdict.schema, verdict.shown()


# --- each spelling of each value type, accepted and refused -------------------------------

# Why a JSON Schema cannot tell what the compiler tells (docs/editors.md).
FLOAT = "a whole number written with a decimal point: JSON has one number type"
WHOLE_BYTES = "a fraction of a byte: the schema checks the form, not the arithmetic"
TOO_LARGE = "a value past 2^63 - 1 written with a unit"


@dataclass(frozen=True, slots=True)
class Spelling:
    """A file with one value in its place (``{v}``, as YAML text) and what both must say."""

    template: str
    at: str  # the value's YAML path, dotted
    value: str
    ok: bool
    beyond: str = ""  # the schema accepts, the compiler refuses: why no schema can say it


def _spellings(
    template: str, at: str, ok: list[str], bad: list[str], beyond: dict[str, str] | None = None
) -> list[Spelling]:
    out = [Spelling(template, at, v, True) for v in ok]
    out += [Spelling(template, at, v, False) for v in bad]
    out += [Spelling(template, at, v, False, why) for v, why in (beyond or {}).items()]
    return out


_STORAGE = "version: 1\npools:\n  storage:\n    - name: s\n      capacity: {v}\n"
_SITE = "version: 1\nsite:\n  name: t\n  {v}\n"
_GROUP = "version: 1\nhost_groups:\n  - name: g\n    hosts: cn[1-4]\n    {v}\n"
_VOLUME = (
    "version: 1\nvolumes:\n  - name: vol\n    provider: p\n    path: /v\n    capacity: 1TiB\n"
    "    {v}\n"
)
_DATASET = (
    "version: 1\ndatasets:\n  - name: d\n    version: {v}\n    size: 1GiB\n"
    "    digest: sha256:" + "0" * 64 + "\n    source: d\n"
)
_EXEC = "version: 1\nproviders:\n  - name: p\n    kind: exec\n    command: [x]\n    {v}\n"
_DIRECTORY = "version: 1\nproviders:\n  - name: p\n    kind: directory\n    {v}\n"
_QUOTA = "version: 1\nquotas:\n  - {v}\n"

SPELLINGS = [
    *_spellings(
        _STORAGE, "pools.storage.0.capacity",
        ok=["0", "1073741824", "512GiB", "2 TB", "1.5TiB", "1.0B", "2PB", "'1024'",
            "9223372036854775807", "0.5KiB"],
        bad=["-1", "2 PIB", "5 gib", "5GB5", "GiB", "''", "true", "1.5", "'5  GiB'", "' 5GiB'",
             '"5GiB\\n"', "9223372036854775808", "'\u0665GiB'", "null", "[1]", "5 B B"],
        beyond={"5.0": FLOAT, "1e3": FLOAT, "'1.3B'": WHOLE_BYTES, "'8192PiB'": TOO_LARGE},
    ),
    *_spellings(
        _EXEC.replace("{v}", "max_reply_bytes: {v}"), "providers.0.max_reply_bytes",
        ok=["1", "'0.5KiB'", "256MiB"], bad=["0", "'0GiB'", "'0.0GiB'", "-1"],
    ),
    *_spellings(
        _SITE.replace("{v}", "join_deadline: {v}"), "site.join_deadline",
        ok=["0", "1800", "90s", "30m", "12h", "14d", "1h30m", "'1h 30m'", "'30 m'", "1h1h"],
        bad=["30 minutes", "1w", "1H", "'30'", "''", "-5", "true", "1.5", "m", "1h30", "' 30m'",
             "'1h  30m'", "1.5h", "'1h,30m'"],
        beyond={"30.0": FLOAT, "999999999999999999999d": TOO_LARGE},
    ),
    *_spellings(
        _DIRECTORY.replace("{v}", "params: {{quota_timeout: {v}}}"),
        "providers.0.params.quota_timeout",
        ok=["1", "60s", "'0m 1s'"], bad=["0", "0s", "'0h 0m'", "-1"],
    ),
    *_spellings(
        _GROUP.replace("{v}", "counters: {{mem: {v}}}"), "host_groups.0.counters.mem",
        ok=["64", "0", "512GiB", "'64'"],
        bad=["-1", "true", "1.5", "x", "null", "[64]", "1_000", "0b1", "2024-01-01"],
        beyond={"64.0": FLOAT},
    ),
    *_spellings(
        _GROUP.replace("{v}", "counters: {{slots: {v}, gpu: 1}}"), "host_groups.0.counters.slots",
        ok=["64", "0", "0x40"],
        bad=["64GiB", "'64'", "16k", "-1", "true", "1.5", "null", "[64]", "1_000"],
        beyond={"64.0": FLOAT},
    ),
    *_spellings(
        "version: 1\npools:\n  counters:\n    - {{name: {v}, amount: 8GiB}}\n",
        "pools.counters.0.amount",
        ok=["ib-uplink", "mem", "slot"], bad=["slots", "gpus", "cores"],
    ),
    *_spellings(
        "version: 1\npools:\n  licenses:\n    - name: l\n      amount: {v}\n",
        "pools.licenses.0.amount",
        ok=["0", "16", "9223372036854775807", "0x10", "0o20", "+16"],
        bad=["-1", "'16'", "true", "9223372036854775808", "16.5", "null", "16 seats", "1_000",
             "0b10000", "0x_10", "020_0", "1:20"],
        beyond={"16.0": FLOAT, "1e1": FLOAT},
    ),
    *_spellings(
        _SITE.replace("{v}", "safety: {{max_create_fraction: {v}}}"),
        "site.safety.max_create_fraction",
        ok=["0", "1", "0.25", "1.0", "null"], bad=["1.5", "-0.1", "'0.5'", "true", ".inf", "50%"],
        beyond={".nan": "not a number, which JSON cannot hold (and JSON Schema's bounds let pass)"},
    ),
    *_spellings(
        _VOLUME.replace("{v}", "root: {{mode: {v}}}"), "volumes.0.root.mode",
        ok=["'0700'", "'755'", "'1777'", '"0644"'],
        bad=["0700", "0o700", "755", "'0800'", "'07'", "'07777'", "u+rwx", "true", "' 0700'",
             "0644", "null"],
    ),
    *_spellings(
        _VOLUME.replace("{v}", "retention: {v}"), "volumes.0.retention",
        ok=["14d", "0", "'1h30m'", "null", "{keep: 7d}", "{keep: 7d, from: job-end}",
            "{keep: 7d, from: output-fetch, unfetched: 30d, orphans: remove}",
            "{keep: 7d, from: output-fetch}", "{keep: 7d, unfetched: null, orphans: report}"],
        bad=["14 days", "{kepp: 7d}", "{keep: 7d, form: output-fetch}", "{}", "[7d]", "true",
             "{keep: 7d, unfetched: 30d}", "{keep: 7d, from: job-end, unfetched: 30d}",
             "{keep: 7d, from: fetch}", "{keep: 7d, orphans: delete}", "{keep: -1}"],
    ),
    *_spellings(
        _VOLUME.replace("{v}", "overcommit: {v}"), "volumes.0.overcommit",
        ok=["true", "false", "True", "FALSE"],
        bad=["yes", "no", "on", "off", "y", "n", "1", "0", "'true'", "1.0", "null", "Yes"],
    ),
    *_spellings(
        _SITE.replace("{v}", "release_orphans: {v}"), "site.release_orphans",
        ok=["true", "false"], bad=["yes", "no", "'false'"],
    ),
    *_spellings(
        "version: 1\nhost_groups:\n  - name: g\n    hosts: {v}\n", "host_groups.0.hosts",
        ok=["cn[0001-0512]", "'gpu[01-08,10]'", "rack[1-2]-n[01-16]", "'login01,login02'",
            "cn[22,130][1-2]", "gpu[01-02]-ib", "a.b_c-d", "''", "cn[1]", "x", "'cn[1-2],gpu[3]'",
            "'n[01-02]x[3,5-6]y'"],
        bad=["cn[1-4] cn[5-8]", "cn[1-4", "cn1-4]", "cn[[1]]", "cn[]", "cn[a-b]",
             "'cn[1-2],,cn3'", "'cn[1-2],'", "' cn1'", "cn;1", "cn[1--2]", "'cn[\u0661-\u0662]'",
             "'   '", "7", '"cn[1\\n]"', "'cn[1-2]x,'", "'[1-2'", "null", "'cn[1,]'"],
        beyond={"cn[5-1]": "a range's bounds compared (XCE202)",
                "cn[0-70000]": "a range's size counted (XCE203)",
                "c" * 254 + "[10-11]": "the length of the names a hostlist makes"},
    ),
    *_spellings(
        _GROUP.replace("{v}", "overrides: {{{v}: {{rack: r}}}}"), "host_groups.0.overrides",
        ok=["'cn[1-2]'", "cn1"], bad=["''", "'cn[1-2] '", "'cn[1'"],
    ),
    *_spellings(
        "version: 1\nhost_groups:\n  - name: {v}\n", "host_groups.0.name",
        ok=["cpu-a", "a.b_c", "a" * 255, "0cpu"],
        bad=["-a", "'a b'", "cpu!", "a" * 256, '"cpu\\n"', "123", "''", '"gpu\\u200bx"', "null",
             "é"],
    ),
    *_spellings(
        "version: 1\nvolumes:\n  - name: {v}\n    provider: p\n    path: /v\n    capacity: 1TiB\n",
        "volumes.0.name",
        ok=["alice", "a.b", "élise", "a-b", "A_1", "'a@b'"],
        bad=[".hidden", "-x", "a/b", "a..b", "'a b'", '"a\\u200bb"', "''", '"a\\x01b"', "'.'",
             "'..'", "7", "a" * 256, '"a\\u00a0b"', '"a\\u2028b"'],
        beyond={"é" * 128: "a name's length in UTF-8 bytes, not in characters"},
    ),
    *_spellings(
        _VOLUME.replace("path: /v", "path: {v}").replace("    {v}\n", ""), "volumes.0.path",
        ok=["/v", "/shared/xce", "//a", "/a/", "/a.b/c-d"],
        bad=["v", "/", "//", "/a//b", "/a/../b", "/a/.b", "/-a", "'/a b'", "/a/..", "''", "7",
             "/" + "d" * 256],
    ),
    *_spellings(
        _GROUP.replace("{v}", "rack: {v}"), "host_groups.0.rack",
        ok=["r01", "'A B'", "c6i.8xlarge", "é", "null", "x" * 255],
        bad=['"r\\u202e"', '"a\\tb"', '"a\\u2028b"', "5", "x" * 256, "[r]", '"a\\u00a0b"',
             "''"],
        beyond={'"a\\U000E0041"': "an invisible character above U+FFFF (a tag character)"},
    ),
    *_spellings(
        _GROUP.replace("{v}", "topology: {v}"), "host_groups.0.topology",
        ok=["{rack: A01}", "{block: b1, switch: s}", "{site.example/pod: p7}", "{}", "{a: 'x y'}",
            "{a_b-c.d: x}", "{" + "k" * 255 + ": v}"],
        bad=["{rack: ''}", "{-rack: a}", "{rack-: a}", "{'a b': x}", "{a//: x}", "{7: x}",
             "{rack: 5}", "{rack: [a]}", "[rack]", '{rack: "a\\tb"}', "{" + "k" * 256 + ": v}",
             '{"r\\u200bk": v}'],
    ),
    *_spellings(
        _GROUP.replace("{v}", "rack: A\n    topology: {v}"), "host_groups.0.topology",
        ok=["{switch: s}", "{block: b}"], bad=["{rack: A}", "{rack: B, switch: s}"],
    ),
    *_spellings(
        _SITE.replace("{v}", "topology: {v}"), "site.topology",
        ok=["[rack, switch, block]", "[]", "[site.example/pod]"],
        bad=["rack", "[rack-]", "['']", "[7]", "{rack: a}"],
    ),
    *_spellings(
        _DATASET, "datasets.0.version",
        ok=["3", "2024", "p14", "'3.10'", "0", "2024-06", "'2024-06-01'", "2024-06-01",
            "2024-06-01T10:00:00Z", "1_000", "9223372036854775807", "'" + "9" * 255 + "'"],
        bad=["3.10", "a@b", "../x", "-1", "true", "null", "'.x'", "!!timestamp 2024-06-01",
             "9223372036854775808", "9" * 400, "'" + "9" * 256 + "'"],
        beyond={"3.0": FLOAT},
    ),
    *_spellings(
        _EXEC.replace("{v}", "credentials: {{token: {v}}}"), "providers.0.credentials.token",
        ok=["env:TOKEN", "file:/etc/x", "env:_A1", "'file:/a:b'"],
        bad=["abc", "env:1X", "file:relative", "123", "true", "'env:X '", "'file:/a b'",
             '"env:X\\n"', "null", "env:", "'file:/'"],
    ),
    *_spellings(
        _EXEC.replace("{v}", "params: {v}"), "providers.0.params",
        ok=["{password: env:X}", "{password: true}", "{password: null}", "{author: bob}",
            "{db_pass: file:/x}", "{public_key: abc}", "{nested: {apiKey: env:K}}",
            "{key: 5}", "{bypass: 1}", "{tokens: [env:A, env:B]}", "{x: [1, 2.5, null, {y: z}]}",
            "{x: 2024-01-01}", "{'<<': x}"],
        bad=["{password: hunter2}", "{apiKey: abc}", "{auth: {user: bob}}", "{tokens: [abc]}",
             "{secret: 5}", "{API_KEY: x}", "{x: {clientSecret: s}}", "{x: .inf}",
             "{1: x}", "[1]", "{x: !!binary aGk=}", "{x: !!set {a}}", "{<<: {x: 1}}"],
    ),
    *_spellings(
        _DIRECTORY.replace("{v}", "params: {{quota_backend: command, quota_command: {v}}}"),
        "providers.0.params.quota_command",
        ok=["[setquota, '{kib}', '{{x}}', '{path}', 'a{subject}b']", "['{kib:}']"],
        bad=["['{foo}']", "['{']", "['}']", "['{kib!r}']", "['{kib:>5}']", "[]", "null",
             "['{kib:{x}}']", "[5]", "['{ kib}']"],
    ),
    *_spellings(
        "version: 1\nproviders:\n  - name: p\n    kind: {v}\n", "providers.0",
        ok=["directory", "controller-map"],
        bad=["exec", "jsonl", "nfs", "null"],
    ),
    *_spellings(
        "version: 1\nproviders:\n  - name: p\n    kind: exec\n    command: {v}\n", "providers.0",
        ok=["[x]", "['/opt/xce/cloud', --flag]"], bad=["[]", "null", "x", "[1]"],
    ),
    *_spellings(
        "version: 1\nproviders:\n  - name: p\n    kind: directory\n    command: {v}\n",
        "providers.0",
        ok=["[]", "null"], bad=["[x]", "x"],
    ),
    *_spellings(
        _QUOTA, "quotas.0",
        ok=["{volume: v, user: a, limit: 1TiB}", "{pool: p, users: {a: 1}}",
            "{volume: v, projects: {c: 1TiB}, users: {a: 1TiB}}",
            "{pool: p, project: c, limit: 16, pool: p}".replace(", pool: p}", "}"),
            "{volume: v, pool: null, user: a, limit: 1}"],
        bad=["{volume: v, pool: p, users: {a: 1}}", "{volume: v}", "{volume: v, user: a}",
             "{volume: v, user: a, project: b, limit: 1}", "{volume: v, limit: 1, users: {a: 1}}",
             "{volume: v, users: {}}", "{users: {a: 1}}", "{volume: null, users: {a: 1}}",
             "{pool: p, project: c, limit: null}"],
    ),
    *_spellings(
        "version: 1\nhost_groups:\n  - name: g\n    hosts: cn[1-9]\n    provisioned: {v}\n",
        "host_groups.0.provisioned",
        ok=["{provider: c, template: t, count: 2}", "{provider: c, template: t, min: 1, max: 2}",
            "{provider: c, template: t, count: 2, min: null}"],
        bad=["{provider: c, template: t, count: 2, min: 1}", "{provider: c}",
             "{provider: c, template: t, count: 2, max: 3}"],
        beyond={"{provider: c, template: t, min: 3, max: 2}": "min compared with max"},
    ),
    *_spellings(
        "{v}", "",
        ok=["version: 1\nhost_groups:\n", "version: 1\npools:\n", "version: 1\n",
            "version: 1\npools:\n  licenses:\n", "version: 1\ndatasets: []\n"],
        bad=["version: 1\nhost_groups: {}\n", "version: 1\nsite:\n", "version: '1'\n",
             "version: 2\n", "version: 0\n", "[]\n", "", "version: 1\nhost_group: []\n",
             "version: 1\npools: []\n", "version: 1\npools: {license: []}\n", "version: true\n",
             "host_groups: []\n", "version: 1\n7: x\n", "%YAML 1.1\n---\nversion: 1\n",
             "%YAML 1.3\n---\nversion: 1\n", "version: 1\n<<: {site: {name: t}}\n",
             "version: !!int 1_0\n"],
    ),
    *_spellings("version: {v}\n", "version", ok=["1"], bad=["'1'"], beyond={"1.0": FLOAT}),
    *_spellings(
        "version: 1\npolicy: {v}\n", "policy",
        ok=["{allow: [{role: proxy, opcodes: [config.reload]}]}", "{}",
            "{roles: [{name: site-mon, description: Monitoring, allow: [x], deny: [y]}]}",
            "{deny: [{role: reporter, opcodes: ['supply.*']}]}",
            "{waivers: [{name: w, guardrail: g, role: r, opcodes: [x], reason: why, "
            "expires: 2027-06-30}]}",
            "{waivers: [{name: w, guardrail: g, role: r, opcodes: [x], reason: why, "
            "expires: '2027W263'}]}"],
        bad=["null", "[]", "{allow: null}", "{alow: []}", "{allow: [{role: proxy}]}",
             "{allow: [{role: proxy, opcodes: []}]}", "{allow: [{role: ' ', opcodes: [x]}]}",
             "{roles: [{name: Bad, allow: [x]}]}", "{roles: [{name: r, allow: [x], deny: []}]}",
             "{roles: [{name: r, allow: [x], description: ''}]}", "{allow: [x]}",
             "{allow: [{role: r, opcodes: [5]}]}",
             "{waivers: [{name: w, guardrail: g, role: r, opcodes: [x], reason: why, "
             "expires: soon}]}",
             "{waivers: [{name: w, guardrail: g, role: r, opcodes: [x], expires: 2027-06-30}]}",
             "{waivers: [{name: w, guardrail: g, role: r, opcodes: [x], reason: why, "
             "expires: 2027}]}", '{roles: [{name: "r\\n", allow: [x]}]}'],
    ),
    *_spellings(
        "version: 1\npolicy:\n  waivers:\n    - {{name: w, guardrail: g, role: r, opcodes: [x], "
        "reason: why, expires: {v}}}\n",
        "policy.waivers.0.expires", ok=["2027-06-30", "'2027-06-30'"],
        bad=["2027-06-30 10:00:00", "!!timestamp 2027-06-30"],
        beyond={"'2027-02-30'": "a date that is not in the calendar: the schema checks the form"},
    ),
]


def _id(s: Spelling) -> str:
    verdict = "beyond" if s.beyond else ("ok" if s.ok else "bad")
    value = s.value if len(s.value) <= 40 else s.value[:20] + f"…({len(s.value)})"
    return f"{s.at or 'file'}={value}:{verdict}"


# Spellings the compiler accepts by mistake, in code that another part owns; strict, so that
# the fix is noticed (and the entry removed).
COMPILER_BUGS = {
    ("policy", '{roles: [{name: "r\\n", allow: [x]}]}'): "compiler/policy/reader.py checks a "
    "name with pattern.match and a '$', which also matches before a final newline",
}


def _spelling_params() -> Iterator[Any]:
    for s in SPELLINGS:
        bug = COMPILER_BUGS.get((s.at, s.value))
        marks = [pytest.mark.xfail(reason=bug, strict=True)] if bug else []
        yield pytest.param(s, marks=marks, id=_id(s))


@pytest.mark.parametrize("spelling", list(_spelling_params()))
def test_spelling(spelling: Spelling) -> None:
    verdict = judge(spelling.template.format(v=spelling.value).encode())
    if spelling.ok:
        assert verdict.loaded and not verdict.compiler and not verdict.schema, verdict.shown()
    elif spelling.beyond:
        assert not verdict.schema, verdict.shown()
        assert_agree(verdict, frozenset({spelling.at}))
    else:
        assert verdict.compiler, verdict.shown()
        assert_agree(verdict)


# --- each value type's form against its validator, on generated text ---------------------

@functools.cache
def _form(annotation: Any) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(value_schema(annotation))


@functools.cache
def _adapter(annotation: Any) -> TypeAdapter[Any]:
    return TypeAdapter(annotation, config=ConfigDict(strict=True))


def _form_accepts(annotation: Any, value: Any) -> bool:
    return bool(_form(annotation).is_valid(value))


def _validator_accepts(annotation: Any, value: Any) -> bool:
    try:
        _adapter(annotation).validate_python(value)
    except ValidationError:
        return False
    return True


def _size_beyond(value: str) -> bool:
    """A size of the right form whose value is not whole bytes, or is past 2^63 - 1."""
    number, unit = re.fullmatch(r"([0-9.]+) ?([A-Za-z]*)", value).groups()  # type: ignore[union-attr]
    amount = Decimal(number) * SIZE_UNITS[unit or "B"]
    return amount != amount.to_integral_value() or amount > MAX_AMOUNT


_SETTINGS = settings(max_examples=300, deadline=None)


@_SETTINGS
@given(st.text(alphabet="0123456789. BKMGTPkib\n", max_size=10))
def test_size_form(value: str) -> None:
    form, compiler = _form_accepts(Size, value), _validator_accepts(Size, value)
    assert form == compiler or (form and _size_beyond(value)), (value, form, compiler)


@_SETTINGS
@given(st.text(alphabet="0123456789 smhdw.\n", max_size=10))
def test_duration_form(value: str) -> None:
    form, compiler = _form_accepts(Duration, value), _validator_accepts(Duration, value)
    assert form == compiler, (value, form, compiler)


_NAME_CHARS = "aZ09._-/@ \n\t\x00\x7f\x85\u00a0\u00ad\u200b\u202e\u2028\ufeff\u00e9\ue000"


@_SETTINGS
@given(st.text(alphabet=_NAME_CHARS, max_size=8))
@pytest.mark.parametrize("annotation", [Name, SafeName, DatasetName, Label, Mode],
                         ids=["name", "path-safe", "dataset", "label", "mode"])
def test_name_forms(annotation: Any, value: str) -> None:
    form, compiler = _form_accepts(annotation, value), _validator_accepts(annotation, value)
    assert form == compiler, (value, form, compiler)


@_SETTINGS
@given(st.text(alphabet="cn01239[]-,. ;\n", max_size=14))
def test_hostlist_form(value: str) -> None:
    try:
        expand(value)
        compiler, beyond = True, False
    except HostlistError as err:
        compiler, beyond = False, err.reason != "syntax"
    form = _form_accepts(HostlistKey, value)
    assert form == compiler or (form and beyond), (value, form, compiler)


@_SETTINGS
@given(st.text(alphabet="envfile:/_AZ09 \n\u00a0", max_size=10))
def test_reference_form(value: str) -> None:
    assert _form_accepts(SecretRef, value) == is_reference(value), value


@_SETTINGS
@given(st.text(alphabet="{}kibytes:!r x", max_size=10))
def test_template_form(value: str) -> None:
    assert _form_accepts(Template, value) == _validator_accepts(Template, value), value


_KEY_WORDS = ["api", "API", "Api", "key", "Key", "KEY", "keys", "token", "TOKEN", "Token",
              "pass", "Pass", "PASS", "auth", "Auth", "author", "Word", "private", "access",
              "x", "X", "s", "_", "-", ".", "2", " ", "\u00e9", "credential", "secret"]


_SECRET_KEY = re.compile(secret_key_pattern())


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(_KEY_WORDS), min_size=1, max_size=4).map("".join))
def test_secret_key_pattern(key: str) -> None:
    """An external provider's params hold a secret under the same keys in the editor."""
    assert bool(_SECRET_KEY.search(key)) == is_secret_key(key), key


# --- the patterns as an editor reads them ------------------------------------------------

def _patterns(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern" and isinstance(value, str):
                yield value
            if key == "patternProperties":
                yield from value
            yield from _patterns(value)
    elif isinstance(node, list):
        for item in node:
            yield from _patterns(item)


_JS = """
const [patterns, texts] = JSON.parse(require("fs").readFileSync(0, "utf8"));
console.log(JSON.stringify(patterns.map((p) => {
  try { const r = new RegExp(p, "u"); return texts.map((t) => r.test(t)); }
  catch (e) { return "invalid: " + e.message; }
})));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node (JavaScript) to run")
def test_patterns_read_the_same_in_javascript() -> None:
    """yaml-language-server compiles each pattern as a JavaScript RegExp with the u flag; a
    pattern it cannot read is a warning on every value, one it reads otherwise a wrong one."""
    patterns = sorted(set(_patterns(SCHEMA)))
    texts = sorted({s.value.strip("'\"") for s in SPELLINGS} | {"cpu\n", "a\u00a0b", "5GiB\n"})
    run = subprocess.run(["node", "-e", _JS], input=json.dumps([patterns, texts]),
                         capture_output=True, text=True, check=True)
    for pattern, javascript in zip(patterns, json.loads(run.stdout), strict=True):
        python = [re.search(pattern, t) is not None for t in texts]
        assert javascript == python, pattern
