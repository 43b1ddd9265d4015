"""Map files read and written a batch of entries at a time, for the benchmark scripts.

A million-host map is 1.4 GB of JSON: its text and its parsed tree at once do not fit the
address space a benchmark may be given (``orjson.loads`` of it died with SIGSEGV under a
20 GB cap). These read the layout ``compiler.core.canonical.dumps`` writes (sorted keys,
two-space indentation, so each entry closes with a line of four spaces and ``}`` and
nothing inside an entry can look like that) and decode a batch of whole entries with
msgspec, as ``decode_map`` does; ``write_map`` writes the same bytes as
``SupplyMap.dumps`` without ever holding the map.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import orjson

from compiler.contract.supply_map import Entry
from compiler.core.canonical import dumps

CHUNK = 16 << 20  # bytes read at a time
BATCH = 8192  # entries encoded at a time
_OPEN = b'\n  "entries": ['  # the line that opens the entries; "[]," when there are none
_CLOSE = b"\n    }"  # the end of one entry: nested values are indented further
_END = b"\n  ]"  # the end of the entries
_EMPTY = b'\n  "entries": []'  # as orjson writes no entries
_BATCH = msgspec.json.Decoder(list[Entry])
T = TypeVar("T")
_PLACEHOLDER = "sha256:" + "0" * 64


class NotCanonical(ValueError):
    """The file is not a map as ``compiler.core.canonical.dumps`` lays it out."""


def read_entries(
    path: Path, kind: type[T] = Entry  # type: ignore[assignment]
) -> tuple[dict[str, Any], Iterator[list[T]]]:
    """The map's other top-level fields, and its entries a batch at a time (in file order,
    which is id order) as ``kind`` (``Entry``, or a msgspec Struct of fewer of its fields,
    which decodes faster); the header is filled in once the batches are exhausted."""
    decoder = _BATCH if kind is Entry else msgspec.json.Decoder(list[kind])  # type: ignore[valid-type]
    header: dict[str, Any] = {}
    f = path.open("rb")
    buf = f.read(CHUNK)
    start = buf.find(_OPEN)
    if not buf.startswith(b"{\n") or start < 0:
        f.close()
        raise NotCanonical(f"{path} is not a map as xce-compile writes it (sorted, indented)")
    head = buf[: start + len(_OPEN)]

    def batches() -> Iterator[list[T]]:
        with f:
            rest = buf[len(head):]
            while not rest.startswith(b"]"):  # "[]," when there are no entries
                done = rest.find(_END)
                cut = rest.rfind(_CLOSE, 0, done if done >= 0 else len(rest))
                if cut >= 0:
                    yield decoder.decode(b"[" + rest[: cut + len(_CLOSE)] + b"]")
                    rest = rest[cut + len(_CLOSE):].lstrip(b",")
                if done >= 0:
                    rest = rest[rest.find(_END) + len(_END) - 1:]  # from its "]"
                    continue
                chunk = f.read(CHUNK)
                if not chunk:
                    raise NotCanonical(f"{path} ends inside its entries")
                rest += chunk
            header.update(orjson.loads(head + rest + f.read()))
            del header["entries"]

    return header, batches()


def iter_entries(path: Path) -> Iterator[Entry]:
    """Every entry of a map file, in id order."""
    _, batches = read_entries(path)
    for batch in batches:
        yield from batch


def write_map(path: Path, header: Mapping[str, Any], entries: Iterable[Entry],
              tail: Callable[[], Mapping[str, Any]]) -> None:
    """``SupplyMap(...).dumps()`` of ``entries`` (sorted by id, each id once) and the map's
    other fields: ``header`` the fields that are known before the entries, ``tail()`` the
    rest (a callable, so they may be counted while the entries go by). The content digest
    is worked out on the way and written over a placeholder at the end."""
    sha = hashlib.sha256(b'{"entries":[')
    first = True
    with path.open("wb") as out:
        text = dumps({**header, "digest": _PLACEHOLDER, "entries": []})
        before = text.partition(_EMPTY)[0]
        out.write(before + _OPEN)
        for batch in _batched(entries):
            docs = [e.to_json() for e in batch]
            compact = orjson.dumps(docs, option=orjson.OPT_SORT_KEYS)[1:-1]
            indented = orjson.dumps(docs, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)
            sep = b"" if first else b","
            sha.update(sep + compact)
            out.write(sep + indented[1:-2].replace(b"\n", b"\n  "))
            first = False
        rest = tail()
        settings = rest.get("settings", {})
        sha.update(b'],"settings":' + orjson.dumps(settings, option=orjson.OPT_SORT_KEYS) + b"}")
        text = dumps({**header, **rest, "digest": _PLACEHOLDER, "entries": []})
        after = text.partition(_EMPTY)[2]
        if not text.startswith(before):
            raise ValueError("write_map: a field after the entries sorts before them")
        out.write(b"]" + after if first else _END + after)
        out.seek(text.index(_PLACEHOLDER.encode()))
        out.write(("sha256:" + sha.hexdigest()).encode())


def _batched(entries: Iterable[Entry]) -> Iterator[list[Entry]]:
    batch: list[Entry] = []
    for e in entries:
        batch.append(e)
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch
