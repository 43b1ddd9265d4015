"""The saved plan file: what ``xce-apply`` runs, bound to what it was made from.

A plan file records the desired digest, the git revision, the destroy permission, the
fingerprint of every live entry the plan touches, and where it was made (the site folder,
the workdir, the state store: ``reconciler/plan/origin.py``). The applier compares those
before it acts, so a plan made against another config, workdir, store or an older live
map is refused instead of being applied to a world it was not made for. The file is
canonical JSON with a format name, a version and a digest of its own body, so a
truncated, foreign, older or newer file is a clear error, and every field of the body is
type-checked when it is read. ``xce-plan`` seals what it saves (``Seal``): the body then
holds the plan's own identity (``Plan.instance``, from which op_ids derive) and the
planner's clock, and the file a signature by its state store's key
(``reconciler/plan/signature.py``), which ``xce-apply`` checks before anything else.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from compiler.contract.supply_map import Entry, SupplyMap
from compiler.core.canonical import digest_of, dumps
from compiler.core.file_io import MAP_CAP, read_input, write_atomic
from compiler.core.gc_pause import gc_paused
from compiler.core.private import FILE_MODE
from compiler.core.problems import UserError
from reconciler.plan import codes
from reconciler.plan.model import Plan, ShapeError, typed
from reconciler.plan.origin import Origin
from reconciler.plan.signature import sign

FORMAT = "xce-plan"
# 2: the plan records its origin. 3: it is signed by its state store, and keeps its own
# identity and the planner's clock. An older file is refused: a plan is short-lived, and
# making it again is safer than guessing where it was made or trusting an unsigned one.
FORMAT_VERSION = 3
ABSENT = "absent"


def fingerprint(entry: Entry | None, doc: Mapping[str, Any] | None = None) -> str:
    """Digest of an entry's JSON, or ``"absent"``: equal iff the entry did not change.
    ``doc``: the entry's JSON when the caller made it already (``entry.to_json()``)."""
    if entry is None:
        return ABSENT
    return digest_of(entry.to_json() if doc is None else doc)


@dataclass(frozen=True, slots=True)
class Seal:
    """What ``xce-plan`` adds to a plan it saves: the key of the state store it was made
    against (it signs the file and is never written into it), and the time the planner
    planned for, so the apply can plan the same config again and compare."""

    key: bytes = field(repr=False)
    planned_at: float


@dataclass(frozen=True, slots=True)
class SavedPlan:
    """A plan to apply as it is. One read from a file (``origin`` set) carries the digest of
    its body and its signature, checked against the store's key before the apply; one
    handed over in-process (``origin`` None) was just made, and is trusted."""

    plan: Plan
    destroy: bool
    format_version: int = FORMAT_VERSION
    origin: Origin | None = None  # None only for a plan handed over in-process
    digest: str = ""  # of the file's body
    signature: str | None = None
    planned_at: float | None = None  # the planner's clock (sealed files only)
    source: str = "plan"  # the file, or where in the store, for messages

    @property
    def desired_digest(self) -> str:
        return self.plan.desired_digest

    @property
    def revision(self) -> str | None:
        return self.plan.revision


def stale_entries(plan: Plan, live: SupplyMap, skip: Collection[str] = ()) -> list[str]:
    """Entries whose live JSON differs from when the plan was made (sorted ids); ``skip``
    names entries not to check (those an interrupted apply of this plan already changed).
    An entry the live map now calls unknown (two providers report it) cannot be checked,
    so it counts as changed: its absence from the map proves nothing."""
    doubtful = live.unknown_entries
    return sorted(
        entry_id
        for entry_id, fp in plan.fingerprints.items()
        if entry_id not in skip
        and (entry_id in doubtful or fingerprint(live.entries.get(entry_id)) != fp)
    )


def plan_file_bytes(plan: Plan, *, destroy: bool, origin: Origin,
                    seal: Seal | None = None) -> bytes:
    """What a plan file holds, and what ``xce-plan --record`` keeps in the state store.
    Without a ``seal`` (tools, tests) the file is unsigned: it reads, but never applies."""
    # The plan JSON carries the desired digest, the revision and the fingerprints.
    with gc_paused():  # a first plan creates every entry: a dict per action, no cycles
        body: dict[str, Any] = {"destroy": destroy, "origin": origin.to_json(),
                                "plan": plan.to_json()}
        if seal is not None:
            body |= {"instance": plan.instance, "planned_at": seal.planned_at}
        digest = digest_of(body)
        doc: dict[str, Any] = {"format": FORMAT, "version": FORMAT_VERSION, "digest": digest,
                               "body": body}
        if seal is not None:
            doc["signature"] = sign(seal.key, digest)
        return dumps(doc)


def save_plan(path: str | Path, plan: Plan, *, destroy: bool, origin: Origin,
              seal: Seal | None = None) -> bytes:
    """Write atomically (temp file + rename) so a crash never leaves half a plan; returns
    the bytes written (``xce-plan --record`` keeps the same)."""
    target = Path(path)
    data = plan_file_bytes(plan, destroy=destroy, origin=origin, seal=seal)
    try:
        write_atomic(target, data, mode=FILE_MODE)
    except OSError as err:
        raise UserError([codes.problem(codes.PLAN_UNWRITABLE, "cannot write the plan file: "
                                       f"{err.strerror}", str(target))]) from err
    return data


def _fail(label: str | Path, code: str, message: str) -> UserError:
    return UserError([codes.problem(code, message, str(label))])


def _check_header(path: str, doc: Any) -> Mapping[str, Any]:
    if not isinstance(doc, Mapping) or doc.get("format") != FORMAT:
        raise _fail(path, codes.NOT_A_PLAN, "not an xce-gitops plan file")
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise _fail(path, codes.PLAN_MALFORMED, "the plan file has no valid format version")
    if version > FORMAT_VERSION:
        raise _fail(path, codes.PLAN_TOO_NEW, f"the plan file has format version {version}; "
                    f"this xce-gitops reads up to version {FORMAT_VERSION}")
    if version < FORMAT_VERSION:
        raise _fail(path, codes.PLAN_TOO_OLD, f"the plan file was made by an older "
                    f"xce-gitops (format version {version}; this one reads version "
                    f"{FORMAT_VERSION}, whose plans record where they were made and are "
                    "signed by their state store)")
    body = doc.get("body")
    if not isinstance(body, Mapping) or digest_of(body) != doc.get("digest"):
        raise _fail(path, codes.PLAN_CORRUPT, "the plan file is corrupt: its content does not "
                    "match its digest (edited or truncated)")
    return body


def load_plan(path: str | Path) -> SavedPlan:
    """Read a plan file; anything wrong with it is a UserError with a clear Problem."""
    source = Path(path)
    try:
        raw = read_input(source, MAP_CAP)
    except OSError as err:
        raise _fail(source, codes.PLAN_UNREADABLE,
                    f"cannot read the plan file: {err.strerror}") from err
    return parse_plan(raw, str(source))


def parse_plan(raw: bytes, source: str) -> SavedPlan:
    """A plan file's bytes, read from a file or from the state store (a plan recorded for
    review); ``source`` names them in the problems."""
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise _fail(source, codes.PLAN_CORRUPT,
                    f"the plan file is corrupt: not valid JSON ({err})") from err
    body = _check_header(source, doc)
    try:
        return _saved(doc, body, source)
    except ShapeError as err:
        raise _fail(source, codes.PLAN_MALFORMED, f"the plan file is malformed: {err}") from err
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise _fail(source, codes.PLAN_MALFORMED, f"the plan file is malformed "
                    f"({type(err).__name__}: {err})") from err


def _saved(doc: Mapping[str, Any], body: Mapping[str, Any], source: str) -> SavedPlan:
    """The body's fields, each of its type (ShapeError names the first that is not)."""
    destroy = typed(body, "destroy", (bool,), "")
    origin = typed(body, "origin", (Mapping,), "")
    instance = typed(body, "instance", (str,), "", None)
    planned_at = typed(body, "planned_at", (int, float), "", None)
    signature = typed(doc, "signature", (str,), "", None)
    try:
        plan = Plan.from_json(typed(body, "plan", (Mapping,), ""), instance=instance)
    except ShapeError as err:
        raise ShapeError(f"plan.{err}") from None
    return SavedPlan(plan=plan, destroy=destroy, format_version=doc["version"],
                     origin=Origin.from_json(origin), digest=str(doc["digest"]),
                     signature=signature,
                     planned_at=None if planned_at is None else float(planned_at),
                     source=source)
