"""State-store failures as user-facing problems (XCE800–XCE819), never tracebacks.

The problem's subject is the store (a path or a password-free URL), so messages need
not repeat it. Each error is a ``UserError`` so ``run_cli`` prints it; the subclasses let
the apply tell a lock held by another runner from a store that cannot be reached.
"""

from __future__ import annotations

from compiler.core.problems import Hints, UserError
from compiler.core.times import format_utc
from reconciler.state.proxy_records import ProviderLease
from reconciler.state.store import Lock

# the codes, as in reconciler/apply/codes.py: named once, documented in docs/errors.md
BAD_URL = "XCE800"
CANNOT_OPEN = "XCE801"
STORE_FAILED = "XCE802"
SCHEMA_TOO_NEW = "XCE803"
MIGRATION_FAILED = "XCE804"
NOT_A_STORE = "XCE805"
LOCK_HELD = "XCE806"
LOCK_LOST = "XCE807"
EPOCH_MOVED = "XCE808"

HINTS = Hints({
    BAD_URL: "give a file path, sqlite:///abs/path, or postgresql://user@host:port/db",
    CANNOT_OPEN: "check the path or URL, that the server is up and reachable, and the "
    "credentials (keep passwords in PGPASSWORD or a pgpass file, not in the URL)",
    STORE_FAILED: "the database is unreachable, locked for too long, read-only or out of "
    "space; fix it and run again (finished operations are journaled and will be skipped)",
    SCHEMA_TOO_NEW: "a newer xce-gitops has migrated this store; upgrade xce-gitops on this "
    "runner (never point an older one at a newer store)",
    MIGRATION_FAILED: "the migration was rolled back; if the database holds other tables with "
    "the same names, use a dedicated database or schema",
    NOT_A_STORE: "point --state / XCE_STATE_URL at an xce-gitops state database, or at a new "
    "file",
    LOCK_LOST: "the lease expired or was released by force; stop changing things and start "
    "a new run, which takes the lock again",
    EPOCH_MOVED: "another runner took over while this one was cut off; stop here, let that "
    "runner finish, then run again if anything is left",
})


class StateError(UserError):
    """A state-store problem the user must act on (connectivity, schema, locks)."""

    def __init__(self, code: str, message: str, subject: str, hint: str | None = None) -> None:
        super().__init__([HINTS.problem(code, message, subject, hint)])
        self.code = code


class LockHeld(StateError):
    """Another runner holds the lock; carries who, so callers can report or wait."""

    def __init__(self, lock: Lock, label: str, waited: float) -> None:
        self.lock = lock
        job = f", CI job {lock.job_id}" if lock.job_id else ""
        waited_text = f"; gave up after waiting {waited:g} s" if waited > 0 else ""
        super().__init__(
            LOCK_HELD,
            f"lock {lock.name!r} is held by {lock.holder} (host {lock.host}{job}) since "
            f"{format_utc(lock.acquired, 'offset')}, lease until "
            f"{format_utc(lock.expires, 'offset')}{waited_text}",
            label,
            "another apply is running: retry when it is done, or let this run wait for the "
            "lock; if that runner is gone, wait for its lease to expire or run "
            f"`xce-lock release {lock.name}`",
        )


class LockLost(StateError):
    """The caller no longer holds the lock (it expired and was taken over, or was forced)."""

    def __init__(self, name: str, holder: str, current: Lock | None, label: str) -> None:
        self.current = current
        if current is None:
            now = "nobody holds it now"
        elif current.holder == holder:  # found after a reconnect: nobody took it, yet
            now = f"its lease ran out at {format_utc(current.expires, 'offset')}"
        else:
            now = f"it is now held by {current.holder} (host {current.host})"
        super().__init__(LOCK_LOST, f"lock {name!r} is no longer held by {holder}; {now}", label)


class LeaseLost(StateError):
    """A proxy wrote for a provider whose lease it no longer holds (it lapsed, was released,
    or another instance took it under a newer epoch): the write changed nothing."""

    def __init__(self, lease: tuple[str, str, str, int], current: ProviderLease | None,
                 now: float, label: str) -> None:
        """``lease``: the site, provider, instance and epoch the write was made under."""
        site, provider, instance, epoch = lease
        self.provider = provider
        self.current = current
        state = _lease_state(current, instance, epoch, now)
        super().__init__(
            LOCK_LOST,
            f"the lease on provider {provider!r} of site {site!r} is no longer held by "
            f"instance {instance} at epoch {epoch}; {state}",
            label,
            "this proxy stops serving the provider (nothing was written); it takes the lease "
            "again, under a new epoch, once the lease is free",
        )


def _lease_state(current: ProviderLease | None, instance: str, epoch: int, now: float) -> str:
    if current is None:
        return "nobody holds it now"
    if current.instance == instance and current.epoch == epoch:
        if not current.expires:
            return "it was released"
        return f"it lapsed at {format_utc(current.expires, 'offset')}"
    lapsed = "" if current.held(now) else " (lapsed)"
    return (f"it is now held by proxy {current.holder} (instance {current.instance}) at "
            f"epoch {current.epoch}{lapsed}")


def bad_url(text: str, why: str) -> StateError:
    return StateError(BAD_URL, f"not understood as a state store: {why}", text)


def cannot_open(label: str, why: str) -> StateError:
    return StateError(CANNOT_OPEN, f"cannot open the state store: {why}", label)


def store_failed(label: str, why: str) -> StateError:
    return StateError(STORE_FAILED, f"the state store failed: {why}", label)


def schema_too_new(label: str, found: int, supported: int) -> StateError:
    return StateError(
        SCHEMA_TOO_NEW,
        f"the state store has schema version {found}, newer than this xce-gitops supports "
        f"({supported})",
        label,
    )


def migration_failed(label: str, version: int, why: str) -> StateError:
    return StateError(
        MIGRATION_FAILED,
        f"migrating the state store to schema version {version} failed: {why}",
        label,
    )


def not_a_store(label: str, why: str) -> StateError:
    return StateError(NOT_A_STORE, f"not a state store: {why}", label)


def epoch_moved(label: str, name: str, held: int, now: int) -> StateError:
    return StateError(
        EPOCH_MOVED,
        f"the fencing epoch {name!r} moved on to {now} while this runner held epoch {held} "
        "(found when its lost connection to the store was opened again)",
        label,
    )
