"""The thin layer between the shared store logic and one database driver.

Both databases understand the same upsert (``INSERT … ON CONFLICT (key) DO UPDATE SET
… = excluded.…``), so the store writes its SQL once with ``?`` placeholders; a backend
only says how it spells placeholders, a write transaction and whose clock counts, and turns
its driver's failures into a ``StateError``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from reconciler.state.errors import StateError

Row = tuple[Any, ...]
Params = Sequence[Any]


@dataclass(frozen=True, slots=True)
class Dialect:
    name: str  # "sqlite" or "postgresql": picks the migration files
    placeholder: str  # how the driver spells a parameter
    begin_write: str  # starts a transaction that serialises writers
    # an SQL expression of the server's clock in epoch seconds, so runners on many hosts
    # share one clock; None: the database is a local file, and the local clock is that clock
    clock: str | None
    migration_lock: str | None  # serialises concurrent migrators (None: begin_write does)
    # runs INSERT/UPDATE inside WITH and binds a list as one array (unnest): several
    # multi-row writes are then one statement of fixed text, one round trip to a server
    writable_with: bool = False

    @property
    def now_sql(self) -> str | None:
        """The query that reads the clock, or None for the local clock."""
        return f"SELECT {self.clock}" if self.clock else None

    def sql(self, text: str) -> str:
        return text if self.placeholder == "?" else text.replace("?", self.placeholder)


def text_array(values: Iterable[str | None]) -> str:
    """``values`` as one array literal (bound to a ``?::text[]`` of ``writable_with`` SQL):
    the driver then sends one string instead of adapting every element, a third of a
    journal round's client CPU. Each element is quoted, so none is read as NULL or split."""
    return "{" + ",".join("NULL" if v is None else
                          '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
                          for v in values) + "}"


class Backend(ABC):
    """One open connection; the store runs every method through ``transaction``."""

    dialect: Dialect
    label: str

    @abstractmethod
    def query(self, sql: str, params: Params = ()) -> list[Row]: ...

    @abstractmethod
    def execute(self, sql: str, params: Params = ()) -> int:
        """Run a statement; return how many rows it changed."""

    @abstractmethod
    def execute_many(self, sql: str, rows: Iterable[Params]) -> None: ...

    @abstractmethod
    def translate(self, err: Exception) -> StateError | None:
        """The user-facing error for a driver failure, or None when it is our bug."""

    @abstractmethod
    def close(self) -> None: ...

    def lost(self) -> bool:
        """True once the connection itself is gone (a server restart, a pooler, a failover):
        then ``reconnect`` may help. A local file never loses its connection."""
        return False

    def reconnect(self) -> None:
        """Open a new connection in place of the lost one; raise a ``StateError`` if none."""
        raise NotImplementedError(f"{type(self).__name__} cannot reconnect")

    @contextmanager
    def transaction(self, write: bool) -> Iterator[None]:
        """Commit on success, roll back on any error (and keep the connection usable)."""
        self.execute("BEGIN" if not write else self.dialect.begin_write)
        try:
            yield
        except BaseException:
            self._rollback()
            raise
        self.execute("COMMIT")

    def _rollback(self) -> None:
        try:
            self.execute("ROLLBACK")
        except Exception:  # the connection is gone; the first error tells why
            return
