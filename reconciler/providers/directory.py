"""The ``directory`` provider: shared volumes, per-user directories and quotas on a filesystem.

Volumes live at ``<base>/<spec.path>`` (``base`` is ``/`` in production, ``<workdir>/fs``
with the embedded defaults). A volume root is root-owned with the spec's mode; each
``<root>/<user>`` is 0700 and owned by the user (N12) — where the provider cannot
``chown``, it records the intended owner instead (``directory_owners``); quotas are per
user or project (N8); the job directories below a user directory are reported as
``job-dir`` entries (``directory_jobs``) and removed only by the plan's ``evict``, kill-safely
and only if nothing changed in them since the plan saw them (N14,
``directory_cleanup``). Of the optional capabilities (R4) it offers ``expand`` (grow a
quota) and ``publish`` of a user directory, read-write or read-only, the latter enforced
on the files (``directory_publish``). No step ever follows a symbolic link (``safe_fs``),
and nothing is read or changed in a volume root that does not carry the marker this
provider wrote there (``root_marker``): an unmounted volume's empty mount point is not an
empty volume.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from compiler.contract.provider_params import DirectoryParams
from compiler.contract.supply_map import Entry
from compiler.contract.vocabulary import PRESENT, EntryKind
from reconciler.protocol import (
    ACCESS_MODES,
    ErrorCode,
    ExpandParams,
    Offer,
    ProviderError,
    PublishParams,
    Request,
)
from reconciler.providers.base import LIVE_SOURCE, BuiltinProvider, ChangeMade, fence_owner
from reconciler.providers.directory_cleanup import Eviction, Target
from reconciler.providers.directory_jobs import (
    NOT_MADE_HERE,
    job_entries,
    job_id,
    seen_last_write,
)
from reconciler.providers.directory_owners import Names, give, not_applied
from reconciler.providers.directory_publish import (
    READ_ONLY,
    WRITE_BITS,
    held_mode,
    publish_dir,
    unpublish_dir,
)
from reconciler.providers.directory_quota import quota_command
from reconciler.providers.directory_state import DirectoryState, Quota, Volume
from reconciler.providers.names import (
    id_parts,
    invalid,
    is_safe_name,
    request_entry,
    request_id,
    safe_name,
)
from reconciler.providers.root_marker import MARKER, Adopted, RootMarks, RootRef
from reconciler.providers.safe_fs import (
    mode_text,
    octal_mode,
    open_dir_at,
    open_trusted_dir,
    refused,
    remove_dir_at,
    subdirs,
    walk_dirs,
)

KINDS = {EntryKind.VOLUME.value: 1, EntryKind.VOLUME_DIR.value: 2, EntryKind.QUOTA.value: 3,
         EntryKind.JOB_DIR.value: 3}
SCOPES = ("user", "project")
OBSERVED_SPEC = frozenset({"path", "mode", "owner", "group", "retention"})  # from the tree

Putter = Callable[[list[str], Mapping[str, Any], bool], ChangeMade]


@dataclass(frozen=True, slots=True)
class AdoptedDir:
    """What adopting a user directory did: its id and path, the entry as found (mode and
    owner as they are), and whether this owner held it already."""

    id: str
    shown: str
    found: Entry
    already: bool


@dataclass(frozen=True, slots=True)
class DirRecords:
    """What the state says of a volume's user directories, read once per inventory."""

    pending: Mapping[str, str]  # user -> the owner it waits for
    published: Mapping[str, Mapping[str, str]]  # user -> {location: access}
    taken: Mapping[str, int]  # user -> write bits a read-only publish took from its top


def path_parts(path: object) -> list[str]:
    """``/shared/vol`` → ``["shared", "vol"]``, every component path-safe."""
    if not isinstance(path, str) or not path.strip("/"):
        raise invalid(f"volume path must be a non-empty path string, got {path!r}")
    return [safe_name(p, "volume path component") for p in path.strip("/").split("/")]


def declared_fields(entry: Mapping[str, Any]) -> dict[str, Any]:
    """What a volume's entry declares that the tree cannot show: its capacity (the
    filesystem's size is the ``capacity`` verb's), attributes, and spec keys beyond
    ``OBSERVED_SPEC``. Kept and reported back as declared."""
    spec = entry.get("spec") or {}
    amount = entry.get("amount")
    return {
        "amount": amount if isinstance(amount, int) and not isinstance(amount, bool) else None,
        "attributes": dict(entry.get("attributes") or {}),
        "spec": {k: v for k, v in spec.items() if k not in OBSERVED_SPEC},
    }


class DirectoryProvider(BuiltinProvider):
    kind = "directory"
    capabilities = tuple(KINDS)
    offers: ClassVar[Mapping[str, Offer]] = {
        "expand": Offer((EntryKind.QUOTA.value, EntryKind.VOLUME_DIR.value)),
        "publish": Offer((EntryKind.VOLUME_DIR.value,), ACCESS_MODES),
    }
    unsupported: ClassVar[Mapping[str, str]] = {
        "snapshot": "a directory tree on a plain filesystem has no point-in-time copy: one "
                    "copied file by file while jobs write is no snapshot; it needs a "
                    "filesystem that takes them (ZFS, Btrfs, GPFS filesets)",
        "topology": "a shared volume is one filesystem, reachable wherever it is mounted; "
                    "which host groups mount it is site-config's (mounted_by), not something "
                    "the tree can show",
    }

    def __init__(self, name: str, params: DirectoryParams, workdir: Path) -> None:
        self.base = workdir / params.base  # an absolute base replaces the workdir
        self.quota_command = quota_command(params)
        self.configured = self._configured_volumes(params.volumes)
        if not Path(params.base).is_absolute():
            self.base.mkdir(parents=True, exist_ok=True)  # the embedded default lives here
        super().__init__(name, params, workdir)  # opens the ledger: only once params are valid
        self.state = DirectoryState(self.state_dir / "directory.sqlite")
        self.roots = RootMarks(self.ledger)

    @staticmethod
    def _configured_volumes(volumes: Mapping[str, str]) -> dict[str, Volume]:
        """``params.volumes`` ({name: path}): volumes to report before any create. Each is
        checked as every name and path this provider puts on disk is."""
        for name, path in volumes.items():
            path_parts(path)
            safe_name(name, "volume name")
        return {name: Volume(name, path, None) for name, path in volumes.items()}

    def close(self) -> None:
        self.state.close()
        super().close()

    # --- reading --------------------------------------------------------------------------

    def volumes(self) -> dict[str, Volume]:
        return {**self.configured, **self.state.volumes()}

    def known_volume(self, name: str) -> Volume:
        vol = self.volumes().get(name)
        if vol is None:
            raise refused(f"volume {name!r} is not managed by provider {self.name!r}; "
                          f"create volume/{name} first")
        return vol

    def root_ref(self, vol: Volume) -> RootRef:
        return RootRef(f"volume/{vol.name}", str(self.base.joinpath(*path_parts(vol.path))),
                       f"xce-adopt {self.name} {vol.name}")

    @contextmanager
    def volume_root(self, vol: Volume, create_mode: int | None = None) -> Iterator[int]:
        with self._opened_root(vol, create_mode) as (_, fd):
            yield fd

    @contextmanager
    def _opened_root(
        self, vol: Volume, create_mode: int | None = None, *, trust: bool = True
    ) -> Iterator[tuple[int, int]]:
        """The volume root's parent and the root, opened without following a link; the
        root proven by its marker (``root_marker``; ``trust=False``: not checked, for an
        adoption). With ``create_mode`` a root never made before is made (its parents too)
        and marked; a recorded root that is gone is "unmounted", never made again."""
        parts, ref = path_parts(vol.path), self.root_ref(vol)
        new = create_mode if create_mode is not None and self.roots.may_make(ref.root) else None
        with contextlib.ExitStack() as stack:
            try:
                base_fd = stack.enter_context(open_trusted_dir(self.base, "base"))
                parent_fd = stack.enter_context(walk_dirs(base_fd, parts[:-1], self.base, new))
                made = new is not None and self.roots.make(parent_fd, parts[-1], new, ref)
                fd = open_dir_at(parent_fd, parts[-1], ref.shown)
            except ProviderError as err:
                missing = err.code is ErrorCode.NOT_FOUND and trust
                raise (self.roots.gone(ref) if missing else None) or err from None
            stack.callback(os.close, fd)
            if trust and not made:
                self.roots.check(fd, ref)
            yield parent_fd, fd

    @contextmanager
    def existing_root(self, vol: Volume) -> Iterator[int]:
        """The root of a volume that user directories and quotas need to exist already
        (a missing root is FAILED_PRECONDITION; a NOT_FOUND of what is below stays one)."""
        with contextlib.ExitStack() as stack:
            try:
                fd = stack.enter_context(self.volume_root(vol))
            except ProviderError as err:
                if err.code is ErrorCode.NOT_FOUND:
                    raise refused(f"volume {vol.name!r}: {err.message}; create it first") from None
                raise
            yield fd

    def probe(self) -> dict[str, Any]:
        try:
            with open_trusted_dir(self.base, "base"):
                return {"ready": True}
        except ProviderError as err:
            return {"ready": False, "detail": err.message}

    def inventory(self, params: Mapping[str, Any]) -> list[Entry]:
        entries: list[Entry] = []
        names = Names()
        volumes = self.volumes()
        for vol in sorted(volumes.values(), key=lambda v: v.name):
            try:
                with self.volume_root(vol) as fd:
                    entries.append(self.volume_entry(vol, fd, names))
                    records = self.records(vol.name)
                    for user, st in subdirs(fd):
                        if is_safe_name(user):
                            entries.append(self.dir_entry(vol, user, st, records, names))
                            entries.extend(job_entries(fd, self.name, vol.name, vol.path, user))
            except ProviderError as err:
                if err.code is not ErrorCode.NOT_FOUND:
                    raise  # e.g. a symlink in a volume path: refuse to guess
        entries.extend(self.quota_entry(q, volumes.get(q.volume)) for q in self.state.quotas())
        return entries

    def volume_entry(self, vol: Volume, fd: int, names: Names) -> Entry:
        st, vfs = os.fstat(fd), os.fstatvfs(fd)
        spec: dict[str, Any] = {"path": vol.path, "mode": mode_text(st.st_mode),
                                "owner": names.user(st.st_uid), "group": names.group(st.st_gid)}
        pending = self.state.pending_root(vol.name)
        if pending is not None and names.still_pending(st, *pending):
            spec["owner"], spec["group"] = pending
            spec["owner_applied"] = False
        if vol.retention is not None:
            spec["retention"] = vol.retention
        declared = vol.declared
        amount = declared.get("amount")
        return Entry(
            id=f"volume/{vol.name}", kind=EntryKind.VOLUME.value, state=PRESENT.value,
            source=LIVE_SOURCE,
            provider=self.name, amount=vfs.f_blocks * vfs.f_frsize if amount is None else amount,
            attributes=dict(declared.get("attributes") or {}),
            spec={**(declared.get("spec") or {}), **spec},
        )

    def records(self, volume: str, pending: Mapping[str, str] | None = None) -> DirRecords:
        return DirRecords(self.state.pending_owners(volume) if pending is None else pending,
                          self.state.publications(volume), self.state.frozen_tops(volume))

    def dir_entry(
        self, vol: Volume, user: str, st: os.stat_result, records: DirRecords, names: Names,
    ) -> Entry:
        """A user directory as it is; while published read-only, with the mode it will
        have again once unpublished, and whether the freeze still holds at its top."""
        pending, pubs = records.pending, records.published.get(user, {})
        spec: dict[str, Any] = {"path": f"{vol.path.rstrip('/')}/{user}",
                                "mode": mode_text(st.st_mode | records.taken.get(user, 0)),
                                "owner": names.user(st.st_uid)}
        if user in pending and names.still_pending(st, pending[user]):
            spec["owner"] = pending[user]
            spec["owner_applied"] = False
        if pubs:
            spec["published"] = [{"location": loc, "access": pubs[loc]} for loc in sorted(pubs)]
        if READ_ONLY in pubs.values() and st.st_mode & WRITE_BITS:
            spec["read_only_intact"] = False
        return Entry(
            id=f"volume-dir/{vol.name}/{user}", kind=EntryKind.VOLUME_DIR.value,
            state=PRESENT.value, source=LIVE_SOURCE, provider=self.name, spec=spec,
        )

    def quota_entry(self, q: Quota, vol: Volume | None = None) -> Entry:
        spec = {"scope": q.scope, "subject": q.subject}
        if vol is not None:
            spec["path"] = vol.path  # the compiled quota names its volume's path too
        return Entry(
            id=f"quota/{q.volume}/{q.scope}/{q.subject}", kind=EntryKind.QUOTA.value,
            state=PRESENT.value,
            source=LIVE_SOURCE, provider=self.name, location=f"volume/{q.volume}",
            amount=q.limit, spec=spec,
        )

    def capacity(self, params: Mapping[str, Any]) -> dict[str, int]:
        target = params.get("id")
        if target is None:
            with open_trusted_dir(self.base, "base") as fd:
                vfs = os.fstatvfs(fd)
        else:
            _, (name,) = id_parts(target, {EntryKind.VOLUME: 1})
            with self.existing_root(self.known_volume(name)) as fd:
                vfs = os.fstatvfs(fd)
        total = vfs.f_blocks * vfs.f_frsize
        return {"total": total, "used": total - vfs.f_bfree * vfs.f_frsize,
                "free": vfs.f_bavail * vfs.f_frsize}

    # --- changing -------------------------------------------------------------------------

    def create(self, params: Mapping[str, Any]) -> ChangeMade:
        return self._put(params, must_exist=False)

    def update(self, params: Mapping[str, Any]) -> ChangeMade:
        return self._put(params, must_exist=True)

    def _put(self, params: Mapping[str, Any], must_exist: bool) -> ChangeMade:
        entry = request_entry(params)
        kind, parts = id_parts(entry["id"], KINDS)
        if kind == EntryKind.JOB_DIR:
            raise invalid(f"{entry['id']} cannot be created or changed: {NOT_MADE_HERE}")
        putters: dict[str, Putter] = {
            EntryKind.VOLUME: self.put_volume, EntryKind.VOLUME_DIR: self.put_dir,
            EntryKind.QUOTA: self.put_quota,
        }
        return putters[kind](parts, entry, must_exist)

    def put_volume(
        self, parts: list[str], entry: Mapping[str, Any], must_exist: bool
    ) -> ChangeMade:
        name = parts[0]
        spec = entry.get("spec") or {}
        known = self.volumes().get(name)
        path = spec.get("path") or (known.path if known else None)
        path_parts(path)
        if known is not None and known.path != path:
            raise refused(f"volume {name!r} is at {known.path}; moving it to {path} is not "
                          "supported (create a new volume and migrate)")
        retention = spec.get("retention", known.retention if known else None)
        if retention is not None and (not isinstance(retention, int) or retention < 0):
            raise invalid(f"volume {name!r}: spec.retention must be seconds, got {retention!r}")
        mode = octal_mode(spec.get("mode"), 0o755, f"volume {name!r} spec.mode")
        # The top of a shared volume is root-owned (N12), unless config names another owner.
        owner = safe_name(spec.get("owner", "root"), "spec.owner")
        group = safe_name(spec.get("group", "root"), "spec.group")
        vol = Volume(name, str(path), retention, declared_fields(entry))
        details: dict[str, Any] = {}
        with self.volume_root(vol, None if must_exist else 0o755) as fd:
            os.fchmod(fd, mode)
            why = give(fd, owner, group)
            if why is not None:
                shown = str(self.base.joinpath(*path_parts(vol.path)))
                details["warnings"] = [not_applied(shown, Names().user(os.fstat(fd).st_uid),
                                                   why)]
            self.state.put_volume(vol)
            self.state.set_pending_root(name, None if why is None else (owner, group))
            return ChangeMade(self.volume_entry(vol, fd, Names()), details)

    def put_dir(self, parts: list[str], entry: Mapping[str, Any], must_exist: bool) -> ChangeMade:
        vname, user = parts
        vol = self.known_volume(vname)
        spec = entry.get("spec") or {}
        mode = octal_mode(spec.get("mode"), 0o700, f"volume-dir {vname}/{user} spec.mode")
        owner = safe_name(spec.get("owner", user), "spec.owner")
        shown = str(self.base.joinpath(*path_parts(vol.path), user))
        details: dict[str, Any] = {}
        with self.existing_root(vol) as root_fd:
            if not must_exist:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(user, 0o700, dir_fd=root_fd)
            fd = open_dir_at(root_fd, user, shown)
            try:
                os.fchmod(fd, held_mode(self.state, vname, user, fd, mode))
                why = give(fd, owner)
                names = Names()
                if why is not None:
                    left_with = names.user(os.fstat(fd).st_uid)
                    details["warnings"] = [not_applied(shown, left_with, why)]
                self.state.set_pending_owner(vname, user, None if why is None else owner)
                records = self.records(vname, {} if why is None else {user: owner})
                return ChangeMade(self.dir_entry(vol, user, os.fstat(fd), records, names),
                                  details)
            finally:
                os.close(fd)

    def put_quota(self, parts: list[str], entry: Mapping[str, Any], must_exist: bool) -> ChangeMade:
        vname, scope, subject = parts
        if scope not in SCOPES:
            raise invalid(f"quota scope must be 'user' or 'project', got {scope!r}")
        vol = self.known_volume(vname)
        limit = entry.get("amount")
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
            raise invalid(f"quota {entry['id']}: amount must be a limit in bytes, got {limit!r}")
        if must_exist and self.state.quota(vname, scope, subject) is None:
            raise ProviderError(ErrorCode.NOT_FOUND, f"{entry['id']} is not set")
        with self.existing_root(vol):
            pass  # a limit is set only on a volume proven mounted (its root's marker)
        self._run_quota(vol, scope, subject, limit)
        quota = Quota(vname, scope, subject, limit)
        self.state.put_quota(quota)
        return ChangeMade(self.quota_entry(quota, vol))

    def _run_quota(self, vol: Volume, scope: str, subject: str, limit: int) -> None:
        if self.quota_command is None:
            return
        # The tool gets the root opened without following a link, never its name again.
        with self.existing_root(vol) as fd:
            self.quota_command.run(scope=scope, subject=subject, limit=limit, dir_fd=fd,
                                   shown=str(self.base.joinpath(*path_parts(vol.path))),
                                   volume=vol.name)

    def delete(self, params: Mapping[str, Any]) -> ChangeMade:
        eid = request_id(params)
        kind, parts = id_parts(eid, KINDS)
        destroy = params.get("destroy") is True
        vol = self.volumes().get(parts[0])
        removed = False
        if vol is not None and kind == EntryKind.JOB_DIR:
            return self.evict(vol, eid, parts, params, destroy)
        if vol is not None and kind == EntryKind.QUOTA:
            _, scope, subject = parts
            if self.state.quota(vol.name, scope, subject) is not None:
                self._run_quota(vol, scope, subject, 0)  # 0 = no limit for quota tools
                self.state.drop_quota(vol.name, scope, subject)
                removed = True
        elif vol is not None and kind == EntryKind.VOLUME_DIR:
            self._not_published(vol, eid, parts[1])
            removed = self._remove_dir(vol, parts[1], destroy)
            self.state.set_pending_owner(vol.name, parts[1], None)
        elif vol is not None:
            self._not_published(vol, eid)
            removed = self._remove_volume(vol, destroy)
            self.state.drop_volume(vol.name)
        return ChangeMade(None, {"deleted": eid, "already_absent": not removed})

    def _not_published(self, vol: Volume, eid: str, user: str | None = None) -> None:
        """Refuse to delete what is published (as CSI refuses a published volume's delete)."""
        pubs = self.state.publications(vol.name)
        if user is not None and pubs.get(user):
            raise refused(f"{eid} is published to {', '.join(sorted(pubs[user]))}; unpublish "
                          "it before deleting it")
        if user is None and pubs:
            where = ", ".join(f"{u} to {loc}" for u in sorted(pubs) for loc in sorted(pubs[u]))
            raise refused(f"{eid} holds published user directories ({where}); unpublish them "
                          "before deleting it")

    def _remove_dir(self, vol: Volume, user: str, destroy: bool) -> bool:
        """Remove ``<root>/<user>`` of a proven root: False when it is already gone (or its
        volume was never made)."""
        shown = str(self.base.joinpath(*path_parts(vol.path), user))
        try:
            with self.volume_root(vol) as root_fd:
                return remove_dir_at(root_fd, user, shown, destroy)
        except ProviderError as err:
            if err.code is ErrorCode.NOT_FOUND:
                return False
            raise

    def _remove_volume(self, vol: Volume, destroy: bool) -> bool:
        """Remove a proven volume root: its marker goes last, once nothing else holds it
        back (a refused removal puts the marker back). False when it was never made."""
        ref = self.root_ref(vol)
        try:
            with self._opened_root(vol) as (parent_fd, fd):
                if not destroy and any(name != MARKER for name in os.listdir(fd)):
                    raise refused(f"{ref.shown} holds data; delete it only with "
                                  "params.destroy = true")
                self.roots.unmark(fd)
                try:
                    removed = remove_dir_at(parent_fd, path_parts(vol.path)[-1], ref.shown,
                                            destroy)
                except BaseException:
                    self.roots.restore(fd, ref)
                    raise
        except ProviderError as err:
            if err.code is not ErrorCode.NOT_FOUND:
                raise
            removed = False
        self.roots.forget(ref)
        return removed

    def adopt(self, target: str | None, entry: Mapping[str, Any] | None,
              owner: str) -> Adopted:
        """Mark an existing folder as volume ``target``'s root (``xce-adopt``): the one way
        a root this provider did not make is trusted. The volume is known to the provider
        or described by ``entry`` (its desired entry); it is tagged with ``owner``."""
        if not target:
            raise invalid(f"name the volume of provider {self.name!r} to adopt")
        vol = self.volumes().get(target)
        if vol is None and entry is not None:
            spec = entry.get("spec") or {}
            retention = spec.get("retention")
            vol = Volume(target, str(spec.get("path")),
                         retention if isinstance(retention, int) else None,
                         declared_fields(entry))
        if vol is None:
            raise ProviderError(ErrorCode.NOT_FOUND, f"volume {target!r} is neither known to "
                                f"provider {self.name!r} nor in its site-config")
        eid = f"volume/{target}"
        fence_owner(eid, self.ledger.tag_of(eid), owner)
        ref = self.root_ref(vol)
        try:
            with self._opened_root(vol, trust=False) as (_, fd):
                was = self.roots.why_not(fd, ref)
                mark = self.roots.mark(fd, ref)
        except ProviderError as err:
            if err.code is not ErrorCode.NOT_FOUND:
                raise
            raise ProviderError(ErrorCode.NOT_FOUND, f"{err.message}: there is nothing to "
                                "adopt; mount the volume first (a volume never made is "
                                "created with its marker by its first create)") from None
        if target not in self.state.volumes():
            self.state.put_volume(vol)
        if owner:
            self.ledger.tag(eid, owner)
        return Adopted(ref, mark, was)

    def adopt_dir(self, volume: str, user: str, owner: str) -> AdoptedDir:
        """Make an existing user directory that this provider did not make ``owner``'s
        (``xce-adopt PROVIDER volume-dir/V/U``): a found directory is reported untagged,
        so the plan never touches it (XCE757); tagged, the next apply sets its mode and
        owner. Nothing on disk changes here; another owner's directory is refused."""
        eid = f"volume-dir/{safe_name(volume, 'volume name')}/{safe_name(user, 'user')}"
        if not owner:
            raise invalid(f"{eid}: the site has no owner tag to adopt it with")
        held = self.ledger.tag_of(eid)
        fence_owner(eid, held, owner)
        vol = self.known_volume(volume)
        with self._user_dir(vol, user) as (fd, shown):
            found = self._dir_now(vol, user, fd)
            self.ledger.tag(eid, owner)
        return AdoptedDir(eid, shown, found, held == owner)

    def evict(self, vol: Volume, eid: str, parts: list[str], params: Mapping[str, Any],
              destroy: bool) -> ChangeMade:
        """The plan's ``evict`` of a job directory: only with ``destroy``, never under a
        read-only publish, and only if nothing in it changed since the plan saw it."""
        _, user, job = parts
        target = Target(vol.name, user, job_id(job), seen_last_write(params))
        if params.get("action", "evict") != "evict":
            raise invalid(f"{eid}: a job directory is only evicted, not {params['action']!r}")
        if not destroy:
            raise refused(f"{eid} holds a job's outputs; evict it only with params.destroy "
                          "= true (xce-apply --destroy)")
        if READ_ONLY in self.state.publications(vol.name).get(user, {}).values():
            raise refused(f"{eid}: {user}'s directory is published read-only, so nothing in "
                          "it is removed; unpublish it first")
        try:
            with self.volume_root(vol) as root_fd:
                details = Eviction(self.state, target).run(root_fd)
        except ProviderError as err:
            if err.code is not ErrorCode.NOT_FOUND:  # only the volume's path can be missing
                raise
            details = {"already_absent": True}
        return ChangeMade(None, {"deleted": eid, **details})

    def targets(self, request: Request) -> tuple[str, ...]:
        """What a change names, and for an expand of a user directory its quota too."""
        named = super().targets(request)
        if request.verb != "expand":
            return named
        users = [t.split("/") for t in named if t.startswith("volume-dir/")]
        return (*named, *(f"quota/{p[1]}/user/{p[2]}" for p in users if len(p) == 3))

    # --- optional capabilities (R4) -------------------------------------------------------

    def expand(self, params: Mapping[str, Any]) -> ChangeMade:
        """Grow a quota to at least ``required_bytes`` (``volume-dir/<v>/<user>``: that
        user's quota on the volume); never shrink it. Runs the quota tool like any change."""
        req = ExpandParams.from_params(params)
        kind, parts = id_parts(req.id, {EntryKind.QUOTA: 3, EntryKind.VOLUME_DIR: 2})
        vname, scope, subject = parts if kind == EntryKind.QUOTA else (parts[0], "user", parts[1])
        vol = self.known_volume(vname)
        qid = f"quota/{vname}/{scope}/{subject}"
        if kind == EntryKind.VOLUME_DIR:
            with self._user_dir(vol, subject):
                pass  # it must exist (NOT_FOUND) and be a directory, not a link
        quota = self.state.quota(vname, scope, subject)
        if quota is None:
            raise ProviderError(ErrorCode.NOT_FOUND, f"{qid} is not set: there is no limit to "
                                f"grow; create {qid} first")
        if quota.limit == 0:
            raise refused(f"{qid} is 0, which quota tools read as no limit; set a limit with "
                          "an update instead")
        if req.limit_bytes is not None and quota.limit > req.limit_bytes:
            raise invalid(f"{qid} is already {quota.limit} bytes, above limit_bytes "
                          f"{req.limit_bytes}; expand never shrinks (an update does)")
        grown = quota.limit < req.required_bytes
        if grown:
            room = self.capacity({"id": f"volume/{vname}"})["total"]
            room = vol.declared.get("amount") or room
            if req.required_bytes > room:
                raise ProviderError(ErrorCode.RESOURCE_EXHAUSTED,
                                    f"{qid} cannot grow to {req.required_bytes} bytes: volume "
                                    f"{vname!r} holds {room}")
            self._run_quota(vol, scope, subject, req.required_bytes)
            quota = Quota(vname, scope, subject, req.required_bytes)
            self.state.put_quota(quota)
        return ChangeMade(self.quota_entry(quota, vol), {
            "capacity_bytes": quota.limit, "expanded": grown, "node_expansion_required": False})

    def publish(self, params: Mapping[str, Any]) -> ChangeMade:
        req = PublishParams.from_params(params, "publish")
        vol, user = self._user_of(req.id)
        with self._user_dir(vol, user) as (fd, shown):
            details = publish_dir(self.state, vol, user, fd, req, shown)
            return ChangeMade(self._dir_now(vol, user, fd), details)

    def unpublish(self, params: Mapping[str, Any]) -> ChangeMade:
        """Remove a publication; one that is not there, or whose directory is gone, is no
        error (as in CSI)."""
        req = PublishParams.from_params(params, "unpublish")
        vol, user = self._user_of(req.id)
        try:
            with self._user_dir(vol, user) as (fd, shown):
                details = unpublish_dir(self.state, vol, user, fd, req.location, shown)
                return ChangeMade(self._dir_now(vol, user, fd), details)
        except ProviderError as err:
            if err.code is not ErrorCode.NOT_FOUND:
                raise
        return ChangeMade(None, unpublish_dir(self.state, vol, user, None, req.location, ""))

    def _user_of(self, target: str) -> tuple[Volume, str]:
        _, (vname, user) = id_parts(target, {EntryKind.VOLUME_DIR: 2})
        return self.known_volume(vname), user

    @contextmanager
    def _user_dir(self, vol: Volume, user: str) -> Iterator[tuple[int, str]]:
        """``<root>/<user>`` opened without following a link, and its name for messages."""
        shown = str(self.base.joinpath(*path_parts(vol.path), user))
        with self.existing_root(vol) as root_fd:
            fd = open_dir_at(root_fd, user, shown)
            try:
                yield fd, shown
            finally:
                os.close(fd)

    def _dir_now(self, vol: Volume, user: str, fd: int) -> Entry:
        return self.dir_entry(vol, user, os.fstat(fd), self.records(vol.name), Names())
