"""Proxy benchmark (issue 24, "Figures"): run by hand, not a test.

    eval "$(bash scripts/postgres.sh start)"          # loopback PostgreSQL: XCE_TEST_PG_URL
    .venv/bin/python benchmarks/bench_proxy.py takeover --repeat 5
    .venv/bin/python benchmarks/bench_proxy.py calls --calls 2000 --workers 8
    .venv/bin/python benchmarks/bench_proxy.py plan /tmp/bp/build/supply-map.json /tmp/bp/live0.json

``takeover``: the proxied example site (tests/proxy/harness.py) with proxy-a and proxy-b as
real processes; the holder of the five leases is SIGKILLed (then SIGTERMed) and the time
until the other holds all five is measured on the store, against ``lease_ttl``.
``calls``: ``--calls`` creates of user directories at the built-in ``shared-fs``, from
``--workers`` threads (the applier's way), through one proxy and the store's call queue
(batched) against the same provider in-process.
``plan``: the big site's plan (``docs/performance.md``, "Plan": the generated site and its
``--drift 0`` snapshot) with every provider an exec double answering from its part of the
snapshot (``snapshot_provider.py``): asked directly by ``xce-plan``, and through one proxy
that has published them all to the store. The goal: at most 1.5 × the direct plan.
Each run works in a fresh schema of the server, dropped at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
from map_stream import iter_entries

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the system tests' harness builds the proxied example site

from compiler.contract.bindings import Bindings  # noqa: E402
from reconciler.pipeline import compile_desired, load_compiled  # noqa: E402
from reconciler.protocol import Request  # noqa: E402
from reconciler.providers.registry import open_provider  # noqa: E402
from reconciler.relay.config import record_config  # noqa: E402
from reconciler.relay.transport import StoreTransport  # noqa: E402
from reconciler.state import StateStore, open_store  # noqa: E402
from tests.proxy.harness import SITE, Timings, ci_env, proxied_site  # noqa: E402
from tests.state.targets import pg_schema  # noqa: E402

BIN = ROOT / ".venv" / "bin"
PROVIDERS = 5  # the example's proxied providers


def pg_base() -> str:
    base = os.environ.get("XCE_TEST_PG_URL")
    if not base:
        sys.exit('XCE_TEST_PG_URL is not set: eval "$(bash scripts/postgres.sh start)"')
    return base


def store_at(url: str) -> StateStore:
    return open_store(url, Path("/nonexistent"), env={})


def wait_for(check: Callable[[], bool], what: str, limit: float = 600.0,
             every: float = 0.02) -> None:
    deadline = time.monotonic() + limit
    while not check():
        if time.monotonic() > deadline:
            sys.exit(f"timed out waiting for {what}")
        time.sleep(every)


class Proxies:
    """xce-proxy processes of one site, each with its log under ``root``."""

    def __init__(self, root: Path, url: str, workdir: Path) -> None:
        self.root, self.url, self.workdir = root, url, workdir
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str) -> None:
        log = (self.root / f"{name}.log").open("ab")
        env = {**ci_env(), "BURST_API_TOKEN": "bench-token"}
        self.procs[name] = subprocess.Popen(
            [str(BIN / "xce-proxy"), "run", name, "--state", self.url, "--workdir",
             str(self.workdir)], stderr=log, stdout=subprocess.DEVNULL, env=env)

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
                proc.wait(60)


def example(root: Path, url: str) -> tuple[Bindings, Proxies]:
    """The proxied example site, its config recorded as an apply records it."""
    (root / "secrets").mkdir(parents=True)
    (root / "secrets" / "flexlm").write_text("bench-flexlm\n")
    site = proxied_site(root / "site", root / "secrets", Timings())
    desired = compile_desired(site)
    with store_at(url) as store:
        record_config(store, desired.supply.site_key, desired.bindings,
                      desired.proxy_allowlists, "bench_proxy")
    return desired.bindings, Proxies(root, url, root / "shared")


def holders(url: str) -> dict[str, str]:
    with store_at(url) as store:
        now = store.store_now()
        return {p: lease.holder for p, lease in store.provider_leases(SITE).items()
                if lease.held(now)}


def takeover(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp, pg_schema("xce_bench", pg_base()) as url:
        bindings, proxies = example(Path(tmp), url)
        try:
            proxies.start("proxy-a")
            wait_for(lambda: set(holders(url).values()) == {"proxy-a"}
                     and len(holders(url)) == PROVIDERS, "proxy-a's leases")
            proxies.start("proxy-b")
            time.sleep(2)  # proxy-b has read the config and stands by
            for sig in (signal.SIGKILL, signal.SIGTERM):
                times = [_one_takeover(proxies, url, sig) for _ in range(args.repeat)]
                print(f"takeover after {sig.name}: median {statistics.median(times):.2f} s, "
                      f"max {max(times):.2f} s over {len(times)} (lease_ttl "
                      f"{bindings.proxy_settings.lease_ttl:g} s)")
        finally:
            proxies.stop_all()


def _one_takeover(proxies: Proxies, url: str, sig: signal.Signals) -> float:
    victim = next(iter(set(holders(url).values())))
    other = "proxy-b" if victim == "proxy-a" else "proxy-a"
    started = time.monotonic()
    proxies.procs[victim].send_signal(sig)
    wait_for(lambda: holders(url) == {p: other for p in holders(url)}
             and len(holders(url)) == PROVIDERS, f"{other} taking over")
    took = time.monotonic() - started
    proxies.procs[victim].wait(60)
    proxies.start(victim)
    time.sleep(2)  # back, standing by
    return took


def calls(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp, pg_schema("xce_bench", pg_base()) as url:
        bindings, proxies = example(Path(tmp), url)
        supply = compile_desired(Path(tmp) / "site").supply
        volume = supply.entries["volume/shared"].to_json()
        template = supply.entries["volume-dir/shared/alice"].to_json()
        dirs = [{**template, "id": f"volume-dir/shared/b{i:05d}",
                 "spec": {**template["spec"], "owner": f"b{i:05d}",
                          "path": f"/shared/xce/b{i:05d}"}} for i in range(args.calls)]
        binding = bindings.binding("shared-fs")
        try:
            proxies.start("proxy-a")
            wait_for(lambda: len(holders(url)) == PROVIDERS, "proxy-a's leases")
            with store_at(url) as store:
                proxied = StoreTransport("shared-fs", binding, bindings.proxy_settings, store,
                                         SITE)
                through = _rate(proxied, volume, dirs, args.workers)
        finally:
            proxies.stop_all()
        local = open_provider("shared-fs", binding, Path(tmp) / "in-process")
        try:
            direct = _rate(local, volume, dirs, args.workers)
        finally:
            local.close()
        print(f"{args.calls} creates from {args.workers} threads: through a proxy "
              f"{through:.0f}/s, in-process {direct:.0f}/s ({direct / through:.1f}× faster)")


def _rate(transport: Any, volume: dict[str, Any], dirs: list[dict[str, Any]],
          workers: int) -> float:
    """Calls per second of creating ``dirs`` (after their volume) at ``transport``."""
    def create(entry: dict[str, Any]) -> None:
        reply = transport.call(Request(verb="create", op_id=uuid.uuid4().hex, epoch=1 << 40,
                                       owner="site/hpc-east", params={"entry": entry}))
        if not reply.ok:
            sys.exit(f"create {entry['id']} failed: {reply.to_json()}")

    create(volume)
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(create, dirs))
    return len(dirs) / (time.monotonic() - started)


def split_snapshot(live: Path, out: Path, names: list[str]) -> dict[str, list[str]]:
    """Each provider's part of ``live`` as an inventory result file (and its info), for
    ``snapshot_provider.py`` (an empty one for a provider that holds nothing); provider ->
    the kinds it holds."""
    parts: dict[str, list[bytes]] = {name: [] for name in names}
    kinds: dict[str, set[str]] = defaultdict(set)
    for entry in iter_entries(live):
        parts[entry.provider].append(orjson.dumps(entry.to_json()))
        kinds[entry.provider].add(entry.kind)
    out.mkdir(parents=True, exist_ok=True)
    for name, docs in parts.items():
        (out / f"{name}.json").write_bytes(
            b'{"generation": 1, "complete": true, "entries": [' + b",".join(docs) + b"]}")
        (out / f"{name}.info.json").write_bytes(orjson.dumps(
            {"name": name, "version": "1", "capabilities": sorted(kinds[name])}))
    return {name: sorted(k) for name, k in kinds.items()}


def snapshot_bindings(desired: Path, parts: Path, proxied: bool) -> dict[str, Any]:
    """The big site's bindings with every provider the snapshot double (in one proxy)."""
    doc = orjson.loads((desired.parent / "bindings.json").read_bytes())
    names = sorted(doc["providers"])
    via = {"via": "proxy"} if proxied else {}
    doc["providers"] = {name: {
        "kind": "exec", "command": [sys.executable, str(Path(__file__).with_name(
            "snapshot_provider.py")), str(parts), name],
        "params": {}, "secrets": {}, "account": None, "timeout": 600,
        "max_reply_bytes": 4 << 30, "proxy": "bench-proxy", "standbys": [], **via}
        for name in names}
    doc["proxies"] = {"bench-proxy": {"host": "localhost", "active": names, "standby": []}}
    if proxied:
        doc["proxy_settings"] = {"inventory_max_age": 86400, "publish_interval": 86400,
                                 "lease_ttl": 3600}
    return dict(doc)


def plan(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp_dir, pg_schema("xce_bench", pg_base()) as url:
        tmp = Path(tmp_dir)
        names = sorted(orjson.loads((args.desired.parent / "bindings.json").read_bytes())
                       ["providers"])
        kinds = split_snapshot(args.live, tmp / "parts", names)
        builds = {}
        for name, proxied in (("direct", False), ("proxied", True)):
            build = tmp / name
            build.mkdir()
            os.symlink(args.desired, build / "supply-map.json")
            (build / "bindings.json").write_bytes(orjson.dumps(
                snapshot_bindings(args.desired, tmp / "parts", proxied)))
            builds[name] = build
        bindings = Bindings.from_json(orjson.loads((builds["proxied"] / "bindings.json")
                                                   .read_bytes()))
        allow = {"bench-proxy": {"role": "proxy", "opcodes": [
            {"name": op} for op in ("supply.query", "supply.inventory-publish",
                                    "lease.acquire", "lease.renew", "lease.release")]}}
        site_key = args.site or _site_key(args.desired)
        with store_at(url) as store:
            record_config(store, site_key, bindings, allow, "bench_proxy")
        proxies = Proxies(tmp, url, tmp / "work")
        try:
            started = time.monotonic()
            proxies.start("bench-proxy")
            wait_for(lambda: _published(url, site_key) == len(kinds), "every provider published",
                     limit=3600, every=0.5)
            print(f"first publication of {len(kinds)} providers: "
                  f"{time.monotonic() - started:.1f} s")
            for name, build in builds.items():
                times = [_plan_once(build, url if name == "proxied" else
                                    str(tmp / f"{name}.sqlite"), tmp) for _ in range(args.repeat)]
                print(f"plan, providers {name}: median {statistics.median(times):.2f} s "
                      f"(runs: {', '.join(f'{t:.2f}' for t in times)})")
        finally:
            proxies.stop_all()


def _site_key(desired: Path) -> str:
    """The key the store keeps the site's records under (the compiled map's site name)."""
    return load_compiled(desired).supply.site_key


def _published(url: str, site: str) -> int:
    with store_at(url) as store:
        return sum(1 for h in store.published_headers(site).values() if h.error is None)


def _plan_once(build: Path, state: str, tmp: Path) -> float:
    started = time.monotonic()
    done = subprocess.run([str(BIN / "xce-plan"), "--desired", str(build / "supply-map.json"),
                           "--state", state, "--workdir", str(tmp / "work"), "--format", "json"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False,
                          env=ci_env())
    took = time.monotonic() - started
    if done.returncode not in (0, 2):
        sys.exit(f"xce-plan exited {done.returncode}: {done.stderr.decode()[-3000:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    one = sub.add_parser("takeover")
    one.add_argument("--repeat", type=int, default=5)
    two = sub.add_parser("calls")
    two.add_argument("--calls", type=int, default=2000)
    two.add_argument("--workers", type=int, default=8)
    three = sub.add_parser("plan")
    three.add_argument("desired", type=Path)
    three.add_argument("live", type=Path)
    three.add_argument("--site", default=None)
    three.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if shutil.which("xce-proxy", path=str(BIN)) is None:
        sys.exit("no .venv/bin/xce-proxy: run scripts/setup.sh")
    {"takeover": takeover, "calls": calls, "plan": plan}[args.what](args)


if __name__ == "__main__":
    main()
