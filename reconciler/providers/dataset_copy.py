"""The ``dataset-copy`` provider: copies of immutable datasets (PR-5) in a local cache.

``create`` (plan verb ``stage``) copies ``name@version`` from its source into a fresh
``.staging-…`` folder inside the cache, hashing the bytes as it writes them, and only
when the digest matches renames the folder to ``<cache_root>/<name>@<version>/`` — so a
copy is either complete and verified or not there. ``delete`` (plan verb ``evict``)
renames it to a ``.trash-…`` name first, so a half-removed copy is reported ``evicting``,
never ``available``. ``inventory`` re-checks digests through a cache (see ``dataset_state``).
The cache root is trusted only with the marker this provider wrote there at its first stage
(or an admin's ``xce-adopt``, ``root_marker``): an unmounted cache is not an empty one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from compiler.contract.provider_params import DatasetCopyParams
from compiler.contract.supply_map import Entry
from compiler.contract.vocabulary import CopyState, EntryKind
from reconciler.protocol import ErrorCode, ProviderError
from reconciler.providers.base import LIVE_SOURCE, BuiltinProvider, ChangeMade
from reconciler.providers.dataset_digest import (
    CHUNK,
    DatasetError,
    combine,
    file_hex,
    open_as,
    open_node,
    walk_tree,
)
from reconciler.providers.dataset_state import CopyRecord, DatasetState, Signature
from reconciler.providers.names import invalid, request_entry, request_id, safe_name
from reconciler.providers.root_marker import MARKER, Adopted, RootMarks, RootRef
from reconciler.providers.safe_fs import DIR_FLAGS, lstat_at, open_trusted_dir, refused

PREFIX = f"{EntryKind.DATASET_COPY}/"
STAGING = ".staging-"
TRASH = ".trash-"
DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")


def dataset_key(name: str, version: str) -> str:
    """``name@version`` of path-safe parts. A name may not start with ``.``: the cache's
    own staging and trash folders do, and a copy named like them would be swept away."""
    if name.startswith("."):
        raise invalid(f"dataset name {name!r} starts with '.', which this cache reserves "
                      "for its staging and trash folders")
    return f"{safe_name(name, 'dataset name')}@{safe_name(version, 'dataset version')}"


def parse_copy_id(entry_id: object) -> tuple[str, str]:
    """``dataset-copy/<name>@<version>@<location>`` → (``name@version``, location)."""
    if not isinstance(entry_id, str) or not entry_id.startswith(PREFIX):
        raise invalid(f"entry {entry_id!r}: this provider holds only dataset-copy entries")
    name, _, rest = entry_id[len(PREFIX):].partition("@")
    version, _, location = rest.partition("@")
    if not location:
        raise invalid(f"entry id {entry_id!r} must be dataset-copy/<name>@<version>@<location>")
    return dataset_key(name, version), location


def parse_dataset(name: str) -> str | None:
    """A cache folder name that is a ``name@version``, else None."""
    ds_name, sep, version = name.partition("@")
    try:
        return dataset_key(ds_name, version) if sep and "@" not in version else None
    except ProviderError:
        return None


def copy_file(src_fd: int, dst_dir_fd: int, dst: str) -> str:
    """Copy the open regular file ``src_fd``, returning the hex SHA-256 of the bytes written."""
    h = hashlib.sha256()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    dst_fd = os.open(dst, flags, 0o444, dir_fd=dst_dir_fd)
    try:
        while chunk := os.read(src_fd, CHUNK):
            h.update(chunk)
            view = memoryview(chunk)
            while view:
                view = view[os.write(dst_fd, view):]
    finally:
        os.close(dst_fd)
    return h.hexdigest()


@contextmanager
def open_source(source: Path) -> Iterator[tuple[int, os.stat_result]]:
    """The dataset's source file or folder, opened once (``open_node``: not a link, FIFO,
    socket or device); staging reads only through this descriptor."""
    try:
        fd, st = open_node(None, source, str(source))
    except DatasetError as err:
        raise refused(f"dataset source {err}") from None
    try:
        yield fd, st
    finally:
        os.close(fd)


def _nearest_existing(path: Path) -> Path:
    """``path`` or the nearest folder above it that exists (``/`` at worst)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def signature(st: os.stat_result) -> Signature:
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino


class DatasetCopyProvider(BuiltinProvider):
    kind = "dataset-copy"  # the provider kind, named for the entries it holds
    capabilities = (EntryKind.DATASET_COPY.value,)

    def __init__(self, name: str, params: DatasetCopyParams, workdir: Path) -> None:
        # Relative paths are under the workdir; an absolute one replaces it.
        self.cache_root = workdir / (params.cache_root or f"cache/{name}")
        self.source_base = workdir / (params.source_base or ".")
        self.location = params.location
        self.limit = params.capacity
        super().__init__(name, params, workdir)  # opens the ledger: only once params are valid
        self.state = DatasetState(self.state_dir / "dataset.sqlite")
        self.roots = RootMarks(self.ledger)
        self.ref = RootRef(f"cache/{name}", str(self.cache_root), f"xce-adopt {name}")

    def close(self) -> None:
        self.state.close()
        super().close()

    def probe(self) -> dict[str, Any]:
        try:
            with self.cache() as cfd:
                if cfd is None:
                    return {"ready": True, "detail": f"{self.cache_root} is made, with its "
                            "marker, by the first stage"}
        except ProviderError as err:
            return {"ready": False, "detail": err.message}
        ready = os.access(self.cache_root, os.W_OK | os.X_OK)
        return {"ready": ready} if ready else {"ready": False,
                                               "detail": f"{self.cache_root} is not writable"}

    @contextmanager
    def cache(self, create: bool = False) -> Iterator[int | None]:
        """The cache root, proven by its marker; None when it was never made (it holds
        nothing yet). ``create``: a root never made is made (its parents too) and marked.
        A recorded root that is gone, or one without its marker, is "unmounted"."""
        made = False
        if create and self.roots.may_make(self.ref.root):
            self.cache_root.parent.mkdir(parents=True, exist_ok=True)
            with open_trusted_dir(self.cache_root.parent, "cache_root's folder") as pfd:
                made = self.roots.make(pfd, self.cache_root.name, 0o755, self.ref)
        if not os.path.lexists(self.cache_root):
            gone = self.roots.gone(self.ref)
            if gone is not None:
                raise gone
            yield None
            return
        with open_trusted_dir(self.cache_root, "cache_root") as cfd:
            if not made:
                self.roots.check(cfd, self.ref)
            yield cfd

    def adopt(self, target: str | None, entry: Mapping[str, Any] | None,
              owner: str) -> Adopted:
        """Mark the existing cache folder as this provider's (``xce-adopt``): the one way a
        root this provider did not make is trusted. Copies found in it stay untagged."""
        if target:
            raise invalid(f"provider {self.name!r} holds one cache, {self.cache_root}; name no "
                          f"volume to adopt it (got {target!r})")
        if not os.path.lexists(self.cache_root):
            raise ProviderError(ErrorCode.NOT_FOUND, f"{self.cache_root} does not exist: there "
                                "is nothing to adopt; mount it first (a cache never made is "
                                "created with its marker by its first stage)")
        with open_trusted_dir(self.cache_root, "cache_root") as cfd:
            was = self.roots.why_not(cfd, self.ref)
            return Adopted(self.ref, self.roots.mark(cfd, self.ref), was)

    # --- reading --------------------------------------------------------------------------

    def copy_id(self, dataset: str) -> str:
        return f"{PREFIX}{dataset}@{self.location}"

    def entry(self, dataset: str, state: CopyState, record: CopyRecord | None, size: int | None,
              found: str | None = None) -> Entry:
        spec: dict[str, Any] = {"dataset": dataset}
        if record is not None:
            spec["digest"] = record.digest
            if record.source is not None:
                spec["source"] = record.source
        if found is not None and (record is None or found != record.digest):
            spec["found_digest" if record else "digest"] = found
        return Entry(
            id=self.copy_id(dataset), kind=EntryKind.DATASET_COPY.value, state=state.value,
            source=LIVE_SOURCE, provider=self.name, location=self.location, amount=size, spec=spec,
        )

    def copy_digest(
        self, dataset: str, dir_fd: int, form: str, verify: bool,
        written: Mapping[str, str] | None = None,
    ) -> tuple[str, int]:
        """The copy's digest and size, re-hashing only files whose signature changed.

        ``written`` holds the hashes of files just staged, so staging never reads twice.
        """
        known = self.state.file_hashes(dataset)
        fresh: dict[str, tuple[Signature, str]] = {}
        files: list[tuple[str, str]] = []
        size = 0
        for rel, parent, name, st in walk_tree(dir_fd):
            if not stat.S_ISREG(st.st_mode):
                continue
            sig = signature(st)
            cached = known.pop(rel, None)
            if cached is not None and cached[0] == sig and not verify:
                hexd = cached[1]
            elif written is not None and rel in written:
                hexd = written[rel]
                fresh[rel] = (sig, hexd)
            else:
                hexd = file_hex(parent, name, rel)
                fresh[rel] = (sig, hexd)
            files.append((rel, hexd))
            size += st.st_size
        self.state.put_file_hashes(dataset, fresh, set(known))
        if form == "file" and len(files) == 1:
            return "sha256:" + files[0][1], size
        return combine(files), size

    def inventory(self, params: Mapping[str, Any]) -> list[Entry]:
        verify = params.get("verify") is True
        records = self.state.copies()
        found: dict[str, Entry] = {}
        passing: dict[str, CopyState] = {}  # copies on their way in (staging) or out (evicting)
        with self.cache() as cfd:
            if cfd is None:
                return []
            with os.scandir(cfd) as it:
                names = sorted(item.name for item in it)
            for name in names:
                for prefix, state in ((STAGING, CopyState.STAGING), (TRASH, CopyState.EVICTING)):
                    if name.startswith(prefix):
                        dataset = parse_dataset(name[len(prefix):].rpartition("-")[0])
                        if dataset:
                            passing.setdefault(dataset, state)
                        break
                else:
                    if (dataset := parse_dataset(name)) is not None:
                        record = records.get(dataset)
                        found[dataset] = self._present(cfd, dataset, record, verify)
        for gone in set(records) - set(found) - set(passing):
            self.state.drop_copy(gone)  # removed behind our back: forget its cache
        for dataset, state in passing.items():
            if dataset not in found:
                found[dataset] = self.entry(dataset, state, records.get(dataset), None)
        return list(found.values())

    def _present(self, cfd: int, dataset: str, record: CopyRecord | None, verify: bool) -> Entry:
        try:
            fd = os.open(dataset, DIR_FLAGS, dir_fd=cfd)
        except OSError:  # a link or a file where a copy folder should be
            return self.entry(dataset, CopyState.CORRUPT, record, None)
        try:
            digest, size = self.copy_digest(dataset, fd, record.form if record else "dir", verify)
        except DatasetError:  # a link planted inside the copy
            return self.entry(dataset, CopyState.CORRUPT, record, None)
        finally:
            os.close(fd)
        ok = record is None or digest == record.digest
        return self.entry(dataset, CopyState.AVAILABLE if ok else CopyState.CORRUPT, record, size,
                          digest)

    def used_bytes(self, cfd: int) -> int:
        """Bytes held in the cache: copies, stagings in progress and trash."""
        return sum(
            st.st_size for rel, *_, st in walk_tree(cfd, strict=False)
            if stat.S_ISREG(st.st_mode) and rel != MARKER
        )

    def capacity(self, params: Mapping[str, Any]) -> dict[str, int]:
        with self.cache() as cfd:
            if cfd is None:  # not made yet: the filesystem it will be made on
                used, vfs = 0, os.statvfs(_nearest_existing(self.cache_root))
            else:
                used, vfs = self.used_bytes(cfd), os.fstatvfs(cfd)
        fs_free = vfs.f_bavail * vfs.f_frsize
        if self.limit is None:
            return {"total": vfs.f_blocks * vfs.f_frsize, "used": used, "free": fs_free}
        return {"total": self.limit, "used": used, "free": max(0, min(self.limit - used, fs_free))}

    # --- changing -------------------------------------------------------------------------

    def _local(self, entry_id: object) -> str:
        dataset, location = parse_copy_id(entry_id)
        if location != self.location:
            raise invalid(f"{entry_id} is at {location}; provider {self.name!r} holds copies "
                          f"at {self.location}")
        return dataset

    def _source(self, value: object) -> Path:
        if not isinstance(value, str) or not value:
            raise invalid("spec.source must name the dataset's file or directory")
        path = Path(value)
        return path if path.is_absolute() else self.source_base / path

    def create(self, params: Mapping[str, Any]) -> ChangeMade:
        entry = request_entry(params)
        dataset = self._local(entry["id"])
        spec = entry.get("spec") or {}
        if spec.get("dataset", dataset) != dataset:
            raise invalid(f"spec.dataset {spec.get('dataset')!r} does not match {entry['id']}")
        expected = spec.get("digest")
        if expected is not None and not (isinstance(expected, str) and DIGEST_RE.match(expected)):
            raise invalid(f"spec.digest must be 'sha256:<64 hex digits>', got {expected!r}")
        source = self._source(spec.get("source"))
        record = self.state.copies().get(dataset)
        with self.cache(create=True) as cfd:
            assert cfd is not None  # made if it was not there
            self._sweep(cfd, dataset)
            if lstat_at(cfd, dataset) is not None:
                present = self._present(cfd, dataset, record, verify=False)
                if (present.state == CopyState.AVAILABLE
                        and expected in (None, present.spec["digest"])):
                    return ChangeMade(present, {"staged": False})  # already there and intact
            with open_source(source) as src:
                self._fits(source, *src)
                form, digest, size = self._stage(cfd, dataset, source, src, expected)
        record = CopyRecord(dataset, form, digest, str(spec.get("source")))
        self.state.put_copy(record)
        return ChangeMade(self.entry(dataset, CopyState.AVAILABLE, record, size), {"staged": True})

    def _fits(self, source: Path, sfd: int, st: os.stat_result) -> None:
        need = st.st_size
        if stat.S_ISDIR(st.st_mode):
            try:
                need = sum(s.st_size for *_, s in walk_tree(sfd) if stat.S_ISREG(s.st_mode))
            except DatasetError as err:
                raise refused(f"dataset source {source}: {err}") from None
        free = self.capacity({})["free"]
        if need > free:
            raise ProviderError(ErrorCode.RESOURCE_EXHAUSTED,
                                f"{need} bytes needed for {source}, {free} free in "
                                f"{self.cache_root}")

    def _stage(self, cfd: int, dataset: str, source: Path, src: tuple[int, os.stat_result],
               expected: str | None) -> tuple[str, str, int]:
        """Copy into a staging folder, verify, and rename into place; nothing left on error."""
        tmp = Path(tempfile.mkdtemp(prefix=f"{STAGING}{dataset}-", dir=self.cache_root)).name
        try:
            tfd = os.open(tmp, DIR_FLAGS, dir_fd=cfd)
            try:
                form, files = self._copy(source, src, tfd)
                os.fchmod(tfd, 0o755)
            finally:
                os.close(tfd)
            digest = "sha256:" + files[0][1] if form == "file" else combine(files)
            if expected is not None and digest != expected:
                raise refused(f"digest mismatch for {dataset} from {source}: expected {expected}, "
                              f"copied data has {digest}; nothing was staged")
            self._replace(cfd, tmp, dataset)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(tmp, dir_fd=cfd)
            raise
        os.fsync(cfd)
        fd = os.open(dataset, DIR_FLAGS, dir_fd=cfd)
        try:
            _, size = self.copy_digest(dataset, fd, form, verify=False, written=dict(files))
        finally:
            os.close(fd)
        return form, digest, size

    def _copy(self, source: Path, src: tuple[int, os.stat_result], tfd: int
              ) -> tuple[str, list[tuple[str, str]]]:
        sfd, st = src
        if stat.S_ISREG(st.st_mode):
            return "file", [(source.name, copy_file(sfd, tfd, source.name))]
        files: list[tuple[str, str]] = []
        try:
            for rel, parent, name, st in walk_tree(sfd):
                if stat.S_ISDIR(st.st_mode):
                    os.mkdir(rel, 0o755, dir_fd=tfd)  # tfd is our own 0700 folder
                    continue
                fd = open_as(parent, name, rel, stat.S_ISREG)
                try:
                    files.append((rel, copy_file(fd, tfd, rel)))
                finally:
                    os.close(fd)
        except DatasetError as err:
            raise refused(f"dataset source {source}: {err}") from None
        return "dir", files

    def _replace(self, cfd: int, tmp: str, dataset: str) -> None:
        """Rename the verified staging folder into place (a corrupt copy goes to trash)."""
        if lstat_at(cfd, dataset) is None:
            os.rename(tmp, dataset, src_dir_fd=cfd, dst_dir_fd=cfd)
            return
        trash = self._trash_name(dataset)
        os.rename(dataset, trash, src_dir_fd=cfd, dst_dir_fd=cfd)
        try:
            os.rename(tmp, dataset, src_dir_fd=cfd, dst_dir_fd=cfd)
        except OSError:
            os.rename(trash, dataset, src_dir_fd=cfd, dst_dir_fd=cfd)
            raise
        self._discard(cfd, trash)

    def _trash_name(self, dataset: str) -> str:
        return f"{TRASH}{dataset}-{os.urandom(6).hex()}"

    def _discard(self, cfd: int, name: str) -> None:
        st = lstat_at(cfd, name)
        if st is None:
            return
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(name, dir_fd=cfd)
        else:
            os.unlink(name, dir_fd=cfd)  # a link is removed itself, never its target

    def _sweep(self, cfd: int, dataset: str) -> None:
        """Remove what a crashed stage or evict of this provider left behind."""
        with os.scandir(cfd) as it:
            names = [item.name for item in it]
        for name in names:
            if name.startswith(TRASH) or name.startswith(f"{STAGING}{dataset}-"):
                self._discard(cfd, name)

    def update(self, params: Mapping[str, Any]) -> ChangeMade:
        raise refused("dataset copies are immutable: evict this copy and stage a new version")

    def delete(self, params: Mapping[str, Any]) -> ChangeMade:
        eid = request_id(params)
        dataset = self._local(eid)
        with self.cache() as cfd:
            present = cfd is not None and lstat_at(cfd, dataset) is not None
            if cfd is not None and present:
                trash = self._trash_name(dataset)
                os.rename(dataset, trash, src_dir_fd=cfd, dst_dir_fd=cfd)
                self._discard(cfd, trash)
        self.state.drop_copy(dataset)
        return ChangeMade(None, {"deleted": eid, "already_absent": not present})

