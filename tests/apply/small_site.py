"""A small valid site of built-in providers only (controller map, directory), written into
a folder that is not named site-config: what the CLI tests plan and apply in a second."""

from __future__ import annotations

from pathlib import Path

FILES = {
    "site.yaml": """\
version: 1
site:
  name: small
  discovery: report
  join_deadline: 30m
  defaults:
    host:
      counters: {slots: 8, mem: 32GiB}
""",
    "hosts.yaml": """\
version: 1
host_groups:
  - name: compute
    hosts: cn[01-04]
""",
    "providers.yaml": """\
version: 1
providers:
  - name: controller
    kind: controller-map
  - name: shared-fs
    kind: directory
    params: {base: fs, quota_backend: ledger}
""",
    "proxies.yaml": """\
version: 1
proxies:
  - name: proxy-a
    host: adm01
    active: [shared-fs]
""",
    "storage.yaml": """\
version: 1
volumes:
  - name: shared
    provider: shared-fs
    path: /shared/xce
    capacity: 10TiB
    mounted_by: [compute]
    users: [alice, bob]
quotas:
  - volume: shared
    users: {alice: 1TiB, bob: 2TiB}
""",
}


def write_site(folder: Path) -> Path:
    """The small site in ``folder`` (created); returns it."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in FILES.items():
        (folder / name).write_text(text)
    return folder


def raise_quotas(folder: Path) -> None:
    """A change that updates entries the first apply made (they are fingerprinted)."""
    storage = folder / "storage.yaml"
    storage.write_text(storage.read_text().replace("{alice: 1TiB, bob: 2TiB}",
                                                   "{alice: 2TiB, bob: 3TiB}"))
