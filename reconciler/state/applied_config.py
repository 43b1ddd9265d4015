"""Applied configurations (issue 24, N2a): what each apply made current for proxies, the
bindings and the proxies' scoped allowlists, as a sequence number per site that grows only
when they changed. Proxies follow the latest; a proxy it does not name refuses to serve."""

from __future__ import annotations

from typing import Any

import orjson

from compiler.core.canonical import digest_of
from reconciler.state.connection import Connection, reconnecting
from reconciler.state.dialect import Row
from reconciler.state.proxy_records import AppliedConfig

_CONFIG_COLUMNS = "site, seq, digest, bindings, allowlists, applied, applied_by"


class AppliedConfigs(Connection):
    """Applied configurations, over the store's connection."""

    @reconnecting
    def record_config(self, site: str, bindings: dict[str, Any], allowlists: dict[str, Any],
                      applied_by: str) -> int:
        """Record the configuration an apply makes current; its sequence number. The same
        bindings and allowlists as the latest keep the latest number (no new row)."""
        digest = digest_of({"bindings": bindings, "allowlists": allowlists})
        with self._write() as now:
            while True:  # two recorders at once (PostgreSQL): the loser reads the winner's row
                latest = self._latest(site)
                if latest is not None and latest[1] == digest:
                    return int(latest[0])
                seq = 1 if latest is None else int(latest[0]) + 1
                if self._execute(
                    f"INSERT INTO applied_config ({_CONFIG_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (site, seq) DO NOTHING",
                    site, seq, digest, orjson.dumps(bindings).decode(),
                    orjson.dumps(allowlists).decode(), now, applied_by,
                ):
                    return seq

    def _latest(self, site: str) -> Row | None:
        rows = self._query("SELECT seq, digest FROM applied_config WHERE site = ? "
                           "ORDER BY seq DESC LIMIT 1", site)
        return rows[0] if rows else None

    @reconnecting
    def applied_config(self, site: str) -> AppliedConfig | None:
        """The latest configuration applied to ``site``; None before the first."""
        with self._transaction(write=False):
            rows = self._query(f"SELECT {_CONFIG_COLUMNS} FROM applied_config WHERE site = ? "
                               "ORDER BY seq DESC LIMIT 1", site)
        if not rows:
            return None
        site, seq, digest, bindings, allowlists, applied, applied_by = rows[0]
        return AppliedConfig(site, int(seq), digest, orjson.loads(bindings),
                             orjson.loads(allowlists), float(applied), applied_by)

    @reconnecting
    def config_sites(self) -> list[str]:
        """The sites some configuration was applied to, by name."""
        with self._transaction(write=False):
            rows = self._query("SELECT DISTINCT site FROM applied_config ORDER BY site")
        return [str(row[0]) for row in rows]
