"""Mutated site-config files for the compile fuzz: byte, line and structural mutations,
hostile values, deep nesting of every form, alias and merge bombs, bad UTF-8.

A mutant is the site's files (name → bytes) with one file changed or one file added, and
the name of the mutation that made it, so a finding names how to make it again.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from io import BytesIO
from typing import Any

from ruamel.yaml import YAML

Files = dict[str, bytes]
Mutation = Callable[[random.Random, bytes], bytes]

# Values no site-config holds, as YAML text: YAML 1.1 spellings, tags, anchors without
# use, control and bidi characters, surrogates, huge and odd numbers, paths out.
HOSTILE_TEXT = [
    "0o17", "010", "0x1F", "0b101", "1_000", "1:30:00", "yes", "No", "on", "OFF", "y", "~",
    ".nan", "-.inf", ".INF", "1e400", "-0", "9" * 400, "-9223372036854775809",
    "!!python/object:os.system [echo]", "!!python/name:os.system", "!!binary aGVsbG8=",
    "!!timestamp 2001-12-14t21:59:43.10-05:00", "!!set {a, b}", "!!omap [a: 1]", "!custom x",
    "!!str", "!!int x", "!!float abc", "*nowhere", "&lonely x", '"\\ud800"', '"\\x00"',
    '"a\\u202eb"', '"\\u2028"', "'../../../etc/passwd'", "/dev/zero", "'\\\\server\\share'",
    '"' + "x" * 100_000 + '"', "''", "[]", "{}", "[[]]", "? complex\n: key", "|\n  text",
    ">-\n  folded", "@at", "`tick", "%TAG", "- list", "{a: 1, a: 2}", "[1, 2, 3]",
    "2024-02-30", "12:00", "env:SECRET", "file:/etc/shadow", "${HOME}", "'{kib}'",
]
HOSTILE_VALUES: list[Any] = [
    None, True, -1, 0, 2**63, -(2**63) - 1, 10**100, float("nan"), float("inf"), 1.5, "",
    "x" * 70_000, "\x00", "\u202e", "\ufeff", "é" * 300, "../..", "a/b", "*", "[1-99999999]",
    [], {}, [[[[[]]]]], {"k": {"k": {"k": {}}}}, list(range(500)), {"<<": {"a": 1}},
]
DEPTHS = [30, 63, 64, 65, 100, 1000, 20_000, 200_000]


def _safe() -> YAML:
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.width = 4096
    return yaml


# --- bytes and lines -------------------------------------------------------------------

def flip_byte(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return bytes([rng.randrange(256)])
    i = rng.randrange(len(data))
    return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1:]


def insert_bytes(rng: random.Random, data: bytes) -> bytes:
    i = rng.randrange(len(data) + 1)
    noise = rng.choice([b"\x00", b"\xff\xfe", b"\xc3", b"\xed\xa0\x80", b"\t", b"\r", b":",
                        b"- ", b"[", b"{", b"&a ", b"*a", b"!!", b"#", b'"', b"'", b"\x85",
                        b"\xe2\x80\xa8", b"\xef\xbb\xbf", bytes(rng.randrange(256)
                                                                for _ in range(8))])
    return data[:i] + noise + data[i:]


def cut_span(rng: random.Random, data: bytes) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + data[i + rng.randrange(1, 64):]


def copy_span(rng: random.Random, data: bytes) -> bytes:
    i = rng.randrange(len(data) + 1)
    j = min(len(data), i + rng.randrange(1, 200))
    k = rng.randrange(len(data) + 1)
    return data[:k] + data[i:j] + data[k:]


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[:rng.randrange(len(data) + 1)]


def bad_utf8(rng: random.Random, data: bytes) -> bytes:
    """Invalid sequences, a lone surrogate's bytes, another encoding altogether."""
    choice = rng.randrange(4)
    if choice == 0:
        return data.decode("utf-8", "replace").encode("utf-16")
    if choice == 1:
        return data.decode("utf-8", "replace").encode("latin-1", "replace") + b"\xe9\xff"
    i = rng.randrange(len(data) + 1)
    return data[:i] + rng.choice([b"\xc0\xaf", b"\xed\xb2\x80", b"\xf8\x88\x80\x80\x80",
                                  b"\x80", b"\xfe\xff"]) + data[i:]


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n") or [b""]


def line_edit(rng: random.Random, data: bytes) -> bytes:
    """Delete, repeat, swap, indent or dedent a line."""
    lines = _lines(data)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    op = rng.randrange(5)
    if op == 0:
        del lines[i]
    elif op == 1:
        lines.insert(j, lines[i])
    elif op == 2:
        lines[i], lines[j] = lines[j], lines[i]
    elif op == 3:
        lines[i] = b" " * rng.choice([1, 2, 3, 4, 8]) + lines[i]
    else:
        lines[i] = lines[i].lstrip()
    return b"\n".join(lines)


def hostile_text(rng: random.Random, data: bytes) -> bytes:
    """A line's value (after ``: `` or ``- ``) replaced by a hostile spelling."""
    lines = _lines(data)
    i = rng.randrange(len(lines))
    line = lines[i]
    cut = max(line.find(b": "), line.find(b"- "))
    value = rng.choice(HOSTILE_TEXT).encode()
    lines[i] = (line[:cut + 2] if cut >= 0 else line + b": ") + value
    return b"\n".join(lines)


# --- structure -------------------------------------------------------------------------

def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _paths(value, (*path, i))
    return out


def _set(root: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    node = root
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return root


def _get(root: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        root = root[part]
    return root


def _restructure(rng: random.Random, data: Any) -> Any:
    path = rng.choice(_paths(data))
    value = _get(data, path)
    op = rng.randrange(6)
    if op == 0:
        return _set(data, path, rng.choice(HOSTILE_VALUES))
    if op == 1 and path:
        parent = _get(data, path[:-1])
        del parent[path[-1]]
        return data
    if op == 2:
        return _set(data, path, [value, value])
    if op == 3:
        return _set(data, path, {"wrapped": value})
    if op == 4 and isinstance(value, dict) and value:
        key = rng.choice(list(value))
        value[str(key) + rng.choice(["s", "_", "X", " "])] = value.pop(key)
        return data
    other = _get(data, rng.choice(_paths(data)))
    return _set(data, path, other)


def structural(rng: random.Random, data: bytes) -> bytes:
    """The file loaded, one node changed (replaced, removed, doubled, wrapped, renamed or
    swapped for another), and written back."""
    try:
        doc = _safe().load(data)
    except Exception:  # a file another mutation broke: mutate its bytes instead
        return line_edit(rng, data)
    out = BytesIO()
    try:
        _safe().dump(_restructure(rng, doc), out)
    except Exception:  # a value YAML cannot write (a cycle): the line edit instead
        return line_edit(rng, data)
    return out.getvalue()


# --- shapes: nesting and bombs -----------------------------------------------------------

# An indented block grows with the square of its depth (200,000 levels: 40 GB): those forms
# stop where the text still fits under a site file's cap, far past the 64 levels allowed.
MAX_INDENTED_DEPTH = 5_000


def deep(form: str, depth: int) -> str:
    """A value nested ``depth`` levels in one of the forms YAML has."""
    if form in ("block-list", "block-map"):
        depth = min(depth, MAX_INDENTED_DEPTH)
    if form == "flow-list":
        return "[" * depth + "]" * depth
    if form == "flow-map":
        return "{a: " * depth + "1" + "}" * depth
    if form == "block-list":
        return "\n" + "".join("  " * (i + 1) + "-\n" for i in range(depth - 1)) + \
            "  " * depth + "- 1"
    if form == "block-map":
        return "\n" + "".join("  " * (i + 1) + "a:\n" for i in range(depth - 1)) + \
            "  " * depth + "a: 1"
    if form == "compact-list":
        return "\n  " + "- " * depth + "1"
    if form == "mixed":
        return "[{a: " * (depth // 2) + "1" + "}]" * (depth // 2)
    # aliases: each level a list holding the one before, written shallow
    lines = ["\n  - &l0 [1]"] + [f"  - &l{i} [*l{i - 1}]" for i in range(1, depth)]
    return "\n".join(lines)


DEEP_FORMS = ["flow-list", "flow-map", "block-list", "block-map", "compact-list", "mixed",
              "aliases"]


def bomb(kind: str, levels: int) -> str:
    """Aliases that stand for 9^levels values, or merge keys that chain as much."""
    if kind == "laughs":
        lines = ["\n  - &b0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
        lines += [f"  - &b{i} [" + ", ".join([f"*b{i - 1}"] * 9) + "]" for i in range(1, levels)]
        return "\n".join(lines)
    if kind == "merge":
        lines = ["\n  m0: &m0 {k0: 1, k1: 2, k2: 3}"]
        lines += [f"  m{i}: &m{i} {{<<: [" + ", ".join([f"*m{i - 1}"] * 3) + f"], k{i}x: {i}}}"
                  for i in range(1, levels)]
        return "\n".join(lines)
    if kind == "keys":
        lines = ["\n  k0: &k0 {a: 1}"]
        lines += [f"  k{i}: &k{i} {{*k{i - 1} : *k{i - 1}, b{i}: *k{i - 1}}}"
                  for i in range(1, levels)]
        return "\n".join(lines)
    return "\n  - &c [*c]"  # a cycle


BOMBS = ["laughs", "merge", "keys", "cycle"]
KEYS = ["host_groups", "pools", "providers", "volumes", "datasets", "quotas", "site", "policy",
        "drift", "proxies", "zz_unknown"]


def shaped(rng: random.Random, data: bytes) -> bytes:
    """A top-level key of the file set to a deep value or a bomb."""
    key = rng.choice(KEYS)
    if rng.random() < 0.5:
        value = deep(rng.choice(DEEP_FORMS), rng.choice(DEPTHS))
    else:
        value = bomb(rng.choice(BOMBS), rng.randrange(2, 12))
    return b"version: 1\n" + f"{key}: {value}\n".encode()


MUTATIONS: dict[str, Mutation] = {
    "flip-byte": flip_byte, "insert-bytes": insert_bytes, "cut-span": cut_span,
    "copy-span": copy_span, "truncate": truncate, "bad-utf8": bad_utf8, "line-edit": line_edit,
    "hostile-text": hostile_text, "structural": structural, "shaped": shaped,
}
# Heavy inputs (deep, bombs) run as processes only: a regression there may take all memory.
IN_PROCESS = [name for name in MUTATIONS if name != "shaped"]


def mutate(rng: random.Random, files: Files, names: list[str]) -> tuple[str, Files]:
    """One mutation of one file (or a new file, for ``shaped``); 1–3 stacked at times."""
    out = dict(files)
    kinds = [rng.choice(names) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
    for kind in kinds:
        if kind == "shaped":
            out[f"zz-{len(out)}.yaml"] = shaped(rng, b"")
            continue
        name = rng.choice(sorted(out))
        out[name] = MUTATIONS[kind](rng, out[name])
    return "+".join(kinds), out
