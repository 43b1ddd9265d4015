"""What the proxy's unit tests share: an applied configuration with directory providers run
by proxies, written by hand as xce-apply records it, and a daemon over a real SQLite or
PostgreSQL store, driven step by step (no process, no signal: the system tests do those)."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reconciler.proxy.context import Context, Identity
from reconciler.proxy.daemon import Daemon
from reconciler.proxy.follow import Follower
from reconciler.proxy.logs import EventLog
from reconciler.proxy.metrics import Metrics
from reconciler.state import StateStore, open_store
from tests.state.targets import pg_schema

SITE = "hpc-test"
OWNER = f"site/{SITE}"
SCOPED = ("provision.create", "provision.return", "supply.update", "supply.query",
          "supply.borrow", "supply.inventory-publish", "lease.acquire", "lease.renew",
          "lease.release")  # the proxy role's provider-scoped opcodes


def directory(token: str | None = None, base: str = "fs") -> dict[str, Any]:
    """A proxied directory provider's binding, as bindings.json holds it."""
    return {"kind": "directory", "params": {"base": base}, "command": None,
            "secrets": {"token": token} if token else {}, "account": None, "timeout": 30,
            "max_reply_bytes": 1 << 20, "proxy": "proxy-a", "standbys": ["proxy-b"],
            "via": "proxy"}


def bindings(providers: Mapping[str, Mapping[str, Any]], *, active: Iterable[str],
             standby: Iterable[str] = (), ttl: float = 15) -> dict[str, Any]:
    """bindings.json: proxy-a active for ``active``, proxy-b standing by for ``standby``."""
    return {"providers": dict(providers),
            "proxies": {"proxy-a": {"host": "adm01", "active": sorted(active), "standby": []},
                        "proxy-b": {"host": "adm02", "active": [], "standby": sorted(standby)}},
            "proxy_settings": {"inventory_max_age": 600, "publish_interval": 60,
                               "lease_ttl": ttl}}


def allowlists(served: Mapping[str, Iterable[str]],
               opcodes: Iterable[str] = SCOPED) -> dict[str, Any]:
    """The ``proxies`` section of allowlists.json as the policy compiler writes it: each
    proxy's provider-scoped opcodes limited to the providers it serves."""
    chosen = sorted(opcodes)
    return {proxy: {"role": "proxy", "host": f"adm-{proxy}", "providers": sorted(providers),
                    "opcodes": [{"name": "host.query", "id": 204},
                                *({"name": op, "id": 0, "providers": sorted(providers)}
                                  for op in chosen)]}
            for proxy, providers in served.items()}


def record(store: StateStore, providers: Mapping[str, Mapping[str, Any]],
           active: Iterable[str], *, standby: Iterable[str] = (),
           opcodes: Iterable[str] = SCOPED, ttl: float = 15, site: str = SITE) -> int:
    """Record an applied configuration as xce-apply does; its seq."""
    active, standby = list(active), list(standby)
    return store.record_config(site, bindings(providers, active=active, standby=standby,
                                              ttl=ttl),
                               allowlists({"proxy-a": active, "proxy-b": standby}, opcodes),
                               "test@host:1/apply")


@dataclass
class Running:
    """A proxy instance driven step by step, and what it logged."""

    daemon: Daemon
    ctx: Context
    stream: io.StringIO

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        lines = [json.loads(line) for line in self.stream.getvalue().splitlines()]
        return [e for e in lines if kind is None or e["event"] == kind]


def proxy(store: StateStore, workdir: Path, name: str = "proxy-a",
          site: str | None = None) -> Running:
    stream = io.StringIO()
    ctx = Context(store, Identity.here(name), EventLog(name, "json", stream), Metrics(),
                  workdir)
    # quiet=0: a step that takes no call publishes the changes (the tests step by hand)
    return Running(Daemon(ctx, Follower(store, name, site, workdir), quiet=0), ctx, stream)


def sqlite(path: Path) -> StateStore:
    return open_store(str(path), path)


@contextlib.contextmanager
def postgres() -> Iterator[StateStore]:
    """A store in a fresh schema of the test server (``XCE_TEST_PG_URL``)."""
    with pg_schema("xce_proxy_unit") as url, \
            open_store(url, Path("/nonexistent"), env={}) as store:
        yield store


def create_volume(name: str, op_id: str, epoch: int = 1) -> dict[str, Any]:
    """What xce-apply queues to create ``volume/<name>`` on a directory provider."""
    return {"verb": "create", "op_id": op_id, "epoch": epoch, "owner": OWNER,
            "params": {"entry": {"id": f"volume/{name}", "kind": "volume", "state": "available",
                                 "spec": {"path": f"/{name}", "mode": "0755"}}},
            "secrets": {}}
