"""Where a saved plan was made: its site (or compiled map), workdir and state store, as data.

``xce-apply PLAN`` takes them from the plan, so in the folder the plan was made in it needs
no other option. A plan applied against another workdir or state store is refused with one
error naming both (docs/apply.md, "Where a saved plan applies"), instead of one stale entry
per entry of a world the plan was not made for. Relative paths are kept as they were
given, relative to the folder the plan was made in, so another checkout of the same
repository at another place applies the plan too. Opening the planned state store is the
review's (``reconciler/review/origin.py``): the plan itself knows no store.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compiler.core.problems import UserError
from reconciler.plan import codes


@dataclass(frozen=True, slots=True)
class PlannedStore:
    """The state store a plan was made against. ``id`` is None when there was none (a plan
    never creates one): the apply then must use the default file, ``label``."""

    id: str | None
    label: str
    option: str | None = None  # --state as given, without a password: the apply's default

    def named(self) -> str:
        return f"{self.label} (store {self.id[:12]})" if self.id else self.label


@dataclass(frozen=True, slots=True)
class Origin:
    folder: str  # absolute: where the plan was made, for messages
    site: str | None  # as given: relative to ``folder``, or absolute
    desired: str | None  # the compiled map, when the plan was made from one
    workdir: str
    workdir_existed: bool  # it held state (the embedded providers') when planning began
    store: PlannedStore
    beside_site: bool = True  # the workdir was the default one, beside the site (or map)

    def to_json(self) -> dict[str, Any]:
        store = self.store
        return {"folder": self.folder, "site": self.site, "desired": self.desired,
                "workdir": self.workdir, "workdir_existed": self.workdir_existed,
                "beside_site": self.beside_site,
                "store": {"id": store.id, "label": store.label, "option": store.option}}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Origin:
        store = doc["store"]
        values = (doc["folder"], doc["workdir"], store["label"])
        optional = (doc.get("site"), doc.get("desired"), store.get("id"), store.get("option"))
        flags = (doc["workdir_existed"], doc["beside_site"])
        if not all(isinstance(v, str) for v in values) or not all(
                isinstance(v, bool) for v in flags) or any(
                v is not None and not isinstance(v, str) for v in optional):
            raise TypeError("the plan's origin is not as xce-plan writes it")
        return cls(doc["folder"], doc.get("site"), doc.get("desired"), doc["workdir"],
                   flags[0], PlannedStore(store.get("id"), store["label"], store.get("option")),
                   flags[1])

    def made(self) -> str:
        what = (f"from the site folder '{self.site}'" if self.site is not None
                else f"from the compiled map '{self.desired}'")
        return f"the plan was made in {self.folder} {what}"

    def inputs(self, site: Path | None, desired: Path | None) -> tuple[Path | None, Path | None]:
        """The site folder and compiled map to apply with: those given, else the plan's,
        found from the current folder (XCE766 when they are not there)."""
        if site is not None or desired is not None:
            return site, desired
        planned = Path(self.site) if self.site is not None else Path(self.desired or ".")
        if not planned.exists():
            raise UserError([codes.problem(
                codes.SITE_NOT_HERE, f"{self.made()}, which is not here: "
                f"{planned.absolute()} does not exist", str(planned))])
        return ((planned, None) if self.site is not None else (None, planned))

    def workdir_for(self, given: Path | None, beside: Path) -> Path:
        """The plan's workdir: the one beside the site applied (``beside``) when the plan's
        was beside its site, else the one it names. Another one given is refused, and so is
        the plan's when it held state at planning and is gone (another machine, a fresh
        checkout, another copy of the site): XCE767."""
        planned = beside if self.beside_site else Path(self.workdir)
        if given is not None and given.resolve() != planned.resolve():
            raise _refused(codes.OTHER_WORKDIR, f"this apply's workdir is '{given}', but "
                           f"{self.made()} against the workdir '{self.workdir}' (here: "
                           f"'{planned}')",
                           "leave --workdir out to use the plan's, or make the plan again "
                           f"with --workdir {given}", str(given))
        if self.workdir_existed and not planned.is_dir():
            raise _refused(codes.OTHER_WORKDIR, f"{self.made()} against the workdir "
                           f"'{self.workdir}', which held the embedded providers' state; it "
                           f"is not here ({planned.absolute()} does not exist)",
                           "apply where the plan was made (the workdir is local state, not "
                           "part of the repository), or make the plan again here",
                           str(planned))
        return planned
    def other_store(self, here: str) -> UserError:
        """XCE768: the apply's state store (``here``) is not the one the plan was made against."""
        planned = (self.store.named() if self.store.id is not None else
                   f"no state store (the default {self.store.label} did not exist yet)")
        return _refused(codes.OTHER_STORE, f"this apply's state store is {here}, but "
                        f"{self.made()} against {planned}",
                        "apply with the store the plan was made against (--state, or "
                        "$XCE_STATE_URL as when planning), or make the plan again against "
                        "this one", "state store")


def _refused(code: str, message: str, hint: str, subject: str) -> UserError:
    return UserError([codes.problem(code, message, subject, hint)])
