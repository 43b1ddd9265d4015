"""Opening what a saved plan was made against, and the origin of a plan made now.

The origin itself is data (``reconciler/plan/origin.py``); this is the part that needs the
state store: the store a plan names is opened, or refused with one error naming both.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from reconciler.plan.origin import Origin, PlannedStore
from reconciler.state import StateStore, chosen_store, open_store
from reconciler.state.urls import (
    PostgresTarget,
    SqliteTarget,
    parse_target,
    without_password,
)


@contextmanager
def open_planned_store(origin: Origin, option: str | None, default: Path) -> Iterator[StateStore]:
    """The state store the plan was made against (``option``: --state, else the plan's
    own --state), or XCE768 naming both. A plan made when there was no store applies
    to the default file of its workdir, ``default``; a store is never made to refuse it."""
    chosen = chosen_store(option or origin.store.option, default)
    target = parse_target(chosen)
    here = target.label if isinstance(target, PostgresTarget) else str(target.path)
    if origin.store.id is None and not (isinstance(target, SqliteTarget)
                                        and target.path.resolve() == default.resolve()):
        raise origin.other_store(here)
    if origin.store.id is not None and isinstance(target, SqliteTarget) \
            and not target.path.exists():
        raise origin.other_store(f"{here} (a new store: there is none there yet)")
    with open_store(chosen, default) as store:
        if origin.store.id is not None and store.store_id != origin.store.id:
            raise origin.other_store(f"{store.label} (store {store.store_id[:12]})")
        yield store


def origin_here(site: Path | None, desired: Path | None, workdir: Path, *, existed: bool,
                beside: bool, store: StateStore | None, default_store: Path,
                option: str | None) -> Origin:
    """The origin of a plan made now, in the current folder (``beside``: ``workdir`` is the
    default one, beside the site or compiled map)."""
    planned = (PlannedStore(None, str(default_store)) if store is None
               else PlannedStore(store.store_id, store.label,
                                 None if option is None else without_password(option)))
    return Origin(str(Path.cwd()), None if site is None else str(site),
                  None if desired is None else str(desired), str(workdir), existed, planned,
                  beside)
