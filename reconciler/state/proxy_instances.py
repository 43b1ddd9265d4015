"""Proxy processes and their refusals (issue 24): each proxy instance's heartbeat (who runs
where, since when, last seen when, in which state) and every call a proxy's allowlist
refused, so ``xce-status`` and an operator can tell who serves a site and what was denied."""

from __future__ import annotations

from reconciler.state.connection import Connection, reconnecting
from reconciler.state.proxy_records import ProxyInstance, Refusal

_INSTANCE_COLUMNS = "site, proxy, instance, host, pid, started, seen, state"
_REFUSAL_COLUMNS = "site, proxy, provider, opcode, rule, op_id, at"


class ProxyInstances(Connection):
    """Proxy instances and refusals, over the store's connection."""

    @reconnecting
    def record_refusal(self, site: str, proxy: str, provider: str, opcode: str, rule: str,
                       op_id: str) -> None:
        """Keep that ``proxy`` refused call ``op_id`` to ``provider``: ``opcode`` was denied
        by ``rule`` of its allowlist."""
        with self._write() as now:
            self._execute(f"INSERT INTO proxy_refusals ({_REFUSAL_COLUMNS}) "
                          "VALUES (?, ?, ?, ?, ?, ?, ?)",
                          site, proxy, provider, opcode, rule, op_id, now)

    @reconnecting
    def refusals(self, site: str) -> list[Refusal]:
        """The refusals recorded for ``site``, oldest first."""
        with self._transaction(write=False):
            rows = self._query(f"SELECT {_REFUSAL_COLUMNS} FROM proxy_refusals WHERE site = ? "
                               "ORDER BY id", site)
        return [Refusal(s, proxy, provider, opcode, rule, op_id, float(at))
                for s, proxy, provider, opcode, rule, op_id, at in rows]

    @reconnecting
    def proxy_seen(self, site: str, proxy: str, instance: str, host: str, pid: int,
                   state: str) -> None:
        """The heartbeat of one proxy instance: seen now, in ``state`` (started the first
        time it was seen)."""
        with self._write() as now:
            self._execute(
                f"INSERT INTO proxy_instances ({_INSTANCE_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (site, proxy, instance) "
                "DO UPDATE SET host = excluded.host, pid = excluded.pid, "
                "seen = excluded.seen, state = excluded.state",
                site, proxy, instance, host, pid, now, now, state,
            )

    @reconnecting
    def proxy_instances(self, site: str) -> list[ProxyInstance]:
        """Every proxy instance seen for ``site``, by proxy, then oldest first."""
        with self._transaction(write=False):
            rows = self._query(f"SELECT {_INSTANCE_COLUMNS} FROM proxy_instances "
                               "WHERE site = ? ORDER BY proxy, started, instance", site)
        return [ProxyInstance(s, proxy, instance, host, int(pid), float(started), float(seen),
                              state)
                for s, proxy, instance, host, pid, started, seen, state in rows]
