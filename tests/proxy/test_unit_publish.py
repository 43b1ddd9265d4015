"""Publishing as a delta: only the entries that changed are written, the gone ones deleted,
and a holder that knows nothing of the rows replaces them whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reconciler.providers.root_marker import MARKER
from reconciler.proxy.publish import delta, entry_texts
from tests.proxy.unit_kit import SITE, create_volume, directory, proxy, record, sqlite


def texts(*entries: dict[str, object]) -> dict[str, str]:
    return entry_texts(list(entries))


A1 = {"id": "volume/a", "amount": 1}
A2 = {"id": "volume/a", "amount": 2}
B = {"id": "volume/b", "amount": 5}
C: dict[str, object] = {"id": "volume/c"}


def test_a_first_publication_replaces_everything() -> None:
    made = delta(None, texts(A1, B))
    assert made.replace and made.deletes == []
    assert [ident for ident, _ in made.upserts] == ["volume/a", "volume/b"]
    assert json.loads(made.upserts[0][1]) == A1


def test_only_what_changed_is_written_and_what_went_is_deleted() -> None:
    before = delta(None, texts(A1, B)).digests
    made = delta(before, texts(A2, C))
    assert not made.replace
    assert [ident for ident, _ in made.upserts] == ["volume/a", "volume/c"]
    assert made.deletes == ["volume/b"]
    assert set(made.digests) == {"volume/a", "volume/c"}


def test_the_same_inventory_writes_nothing() -> None:
    before = delta(None, texts(A1, B)).digests
    made = delta(before, texts({"amount": 5, "id": "volume/b"}, A1))  # order of keys, entries
    assert (made.upserts, made.deletes, made.replace) == ([], [], False)
    assert made.digests == before


@pytest.mark.parametrize(("entries", "why"), [
    ([{"amount": 1}], "without a string 'id'"),
    (["volume/a"], "without a string 'id'"),
    ([A1, A2], "lists 'volume/a' twice"),
])
def test_an_inventory_with_entries_that_cannot_be_rows_is_refused(
        entries: list[object], why: str) -> None:
    with pytest.raises(ValueError, match=why):
        entry_texts(entries)


def test_a_failed_read_publishes_its_error_and_keeps_the_rows(tmp_path: Path) -> None:
    store = sqlite(tmp_path / "state.sqlite")
    record(store, {"shared-fs": directory()}, ["shared-fs"])
    running = proxy(store, tmp_path / "adm01")
    running.daemon.step()
    store.enqueue_calls(SITE, "shared-fs", [("op-1", create_volume("shared", "op-1"))])
    running.daemon.step()  # the call: its reply written, the inventory marked behind
    header = store.published_header(SITE, "shared-fs")
    assert header is not None and header.changed is not None and header.entry_count == 0
    running.daemon.step()  # a quiet step: published, no longer behind
    header = store.published_header(SITE, "shared-fs")
    assert header is not None and header.error is None and header.entry_count == 1
    assert header.changed is None
    # the volume's root loses its marker, as an unmounted one would: the read is refused
    (tmp_path / "adm01" / "fs" / "shared" / MARKER).unlink()
    running.daemon.publisher.publish("shared-fs", running.daemon.leases.held["shared-fs"])
    header = store.published_header(SITE, "shared-fs")
    assert header is not None and header.error is not None
    assert header.error.startswith("FAILED_PRECONDITION: ")
    assert [json.loads(e)["id"] for e in store.published_entries(SITE, "shared-fs")] == \
        ["volume/shared"]
    assert running.events("publish-failed")
