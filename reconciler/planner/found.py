"""Found, not made: a desired user directory that exists untagged and differs (XCE757).

A user directory an admin made by hand before the apply carries no owner tag, so the plan
lists it as co-managed and never touches it: a chmod or chown of something a human made is
not the planner's to decide. Left at that, the plan said "No changes" while the directory
had another mode or owner than site-config's. Each such entry is therefore a warning that
names the directory, each field that differs (desired and found) and the way to make it
ours, as Terraform's ``import`` does: ``xce-adopt PROVIDER volume-dir/V/U`` tags it, and
the next apply corrects it. Computed from the plan's co-managed notes, so an entry left out
by ``--target``, or unknown, is not warned about.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from compiler.contract.supply_map import Entry
from compiler.contract.vocabulary import EntryKind
from compiler.core.problems import Problem, Severity
from reconciler.plan import codes
from reconciler.plan.model import FieldChange, Note
from reconciler.planner.compare import field_changes

# The kinds a provider reports untagged when it finds them, and ``xce-adopt`` can tag.
ADOPTABLE_KINDS = frozenset({EntryKind.VOLUME_DIR})


def adopt_command(entry: Entry) -> str:
    """The command that adopts a found entry: the one place it is spelled."""
    return f"xce-adopt {entry.provider} {entry.id}"


def _shown(value: Any) -> str:
    return "(none)" if value is None else str(value)


def _warning(desired: Entry, changes: Sequence[FieldChange]) -> Problem:
    differs = "; ".join(f"{c.path} is {_shown(c.before)}, site-config says {_shown(c.after)}"
                        for c in changes)
    path = desired.spec.get("path")
    where = f" ({path})" if path else ""
    message = (f"{desired.id}{where} exists but xce-gitops did not make it (it carries no "
               f"owner tag), and it differs from site-config: {differs}. It is left as it "
               "is: the plan never changes a directory someone made by hand")
    hint = (f"if it is the directory site-config means, adopt it: {adopt_command(desired)} "
            "(the next apply then sets what differs); otherwise move it away, and the next "
            "apply creates it")
    return codes.problem(codes.FOUND_NOT_MADE, message, desired.id, hint, Severity.WARNING)


def found_not_made(co_managed: Sequence[Note], desired: Mapping[str, Entry],
                   live: Mapping[str, Entry]) -> list[Problem]:
    """XCE757 for each co-managed entry that config wants, found untagged and different."""
    out: list[Problem] = []
    for note in co_managed:
        want, found = desired.get(note.entry), live.get(note.entry)
        if want is None or found is None or found.owner is not None:
            continue
        if want.kind in ADOPTABLE_KINDS:
            changes = field_changes(want, found, state=False)
            if changes:
                out.append(_warning(want, changes))
    return out
