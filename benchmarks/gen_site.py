"""A synthetic, valid site-config of any size, for the compile and plan benchmarks.

Run: ``.venv/bin/python benchmarks/gen_site.py --hosts 100000 --groups 400 --users 10000
--datasets 1000 --copies 5 OUT_DIR``.

The site looks like a real large cluster, so the compiler does its real work: CPU, GPU and
large-memory groups in files of 50 (some hostlists with two ranges, some per-host
overrides), a few provisioned cloud-burst groups, a dataset cache at every static group
(each its own provider, sized to hold the copies charged to it), volumes with per-user
quotas (mostly the bulk ``users:`` form, every tenth user as a single item) and project
quotas within capacity, license pools (one borrowing), and proxies with standbys.
Everything comes from one seeded ``random.Random``, so the same arguments give the same
bytes. Counts the benchmark relies on: ``--hosts`` host entries (provisioned groups count
their ``count``/``min``), one user quota per ``--users``, ``--copies`` copies per dataset.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from compiler.core.hostlist import MAX_RANGE
from compiler.core.units import parse_size

T = TypeVar("T")
TIB = 2**40
GROUPS_PER_FILE = 50
DATASETS_PER_FILE = 250
USERS_PER_VOLUME = 2500
PROVIDERS_PER_PROXY = 100
HOST_DIGITS = 6
PROVISIONED_COUNT = 8
LICENSES = ("matlab", "ansys", "abaqus", "comsol", "fluent", "starccm", "gaussian", "vasp")
VOLUME_NAMES = ("home", "work", "shared", "projects", "ml", "bio", "climate", "physics")
DATASET_STEMS = (
    "imagenet",
    "era5",
    "grch38",
    "llama-weights",
    "cmip6",
    "laion",
    "coco",
    "kinetics",
    "alphafold",
    "openwebtext",
    "gnomad",
    "sentinel2",
)
QUOTA_SIZES = ("100GiB", "250GiB", "500GiB", "1TiB", "2TiB")
DATASET_SIZES = ("5GiB", "50GiB", "150GiB", "500GiB", "1TiB", "2TiB")
# Per partition: host-name prefix, counters beyond the site defaults, feature sets.
PARTITIONS: dict[str, tuple[str, dict[str, str], tuple[tuple[str, ...], ...]]] = {
    "cpu": ("cn", {"tmp": "1TiB"}, (("avx512", "ib-hdr"), ("avx2", "ib-hdr"))),
    "gpu": (
        "gn",
        {"slots": "96", "mem": "1TiB", "gpu": "8", "nvme": "7TiB"},
        (("a100", "nvlink", "ib-ndr"), ("h100", "nvlink", "ib-ndr")),
    ),
    "bigmem": ("bm", {"slots": "96", "mem": "2TiB"}, (("avx512", "ib-hdr", "bigmem"),)),
}


@dataclass(frozen=True, slots=True)
class Shape:
    """What to generate; ``seed`` makes it reproducible."""

    hosts: int
    groups: int
    users: int
    datasets: int
    copies: int
    seed: int = 1


@dataclass(slots=True)
class Group:
    name: str
    partition: str
    hostlist: str
    prefix: str
    first: int  # number of the first host
    size: int


@dataclass(slots=True)
class Yaml:
    """A YAML text written line by line: the generator controls every byte, and it is fast."""

    lines: list[str] = field(default_factory=lambda: ["version: 1"])

    def add(self, indent: int, text: str) -> None:
        self.lines.append(" " * indent + text)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def quoted(text: str) -> str:
    """A double-quoted YAML scalar (JSON strings are valid YAML)."""
    return json.dumps(text)


def flow(items: Iterable[str]) -> str:
    return "[" + ", ".join(items) + "]"


def chunks(items: Sequence[T], size: int) -> Iterator[tuple[int, Sequence[T]]]:
    for n, start in enumerate(range(0, len(items), size), 1):
        yield n, items[start : start + size]


def check_shape(shape: Shape) -> str | None:
    """Why this shape cannot make a valid site, or None."""
    provisioned = provisioned_groups(shape.groups)
    static = shape.groups - provisioned
    if static < 1:
        return "--groups must be at least 1"
    if shape.hosts < static + provisioned * PROVISIONED_COUNT:
        return (
            f"--hosts must be at least {static + provisioned * PROVISIONED_COUNT} "
            f"for {shape.groups} groups"
        )
    if (shape.hosts // static) * 3 // 2 + 2 > MAX_RANGE:
        return f"--groups too small: a group's hostlist range holds at most {MAX_RANGE} hosts"
    if not 1 <= shape.copies <= static:
        return f"--copies must be between 1 and the number of caches ({static})"
    if shape.users < 1 or shape.datasets < 1:
        return "--users and --datasets must be at least 1"
    return None


def provisioned_groups(groups: int) -> int:
    return groups // 100 if groups >= 100 else int(groups >= 10)


def plan_groups(shape: Shape, rng: random.Random) -> list[Group]:
    """Static groups with sizes adding up exactly to the static host count."""
    n_prov = provisioned_groups(shape.groups)
    n_static = shape.groups - n_prov
    total = shape.hosts - n_prov * PROVISIONED_COUNT
    weights = [rng.uniform(0.5, 1.5) for _ in range(n_static)]
    scale = (total - n_static) / sum(weights)
    sizes = [1 + int(w * scale) for w in weights]
    for i in range(total - sum(sizes)):
        sizes[i % n_static] += 1
    next_number = {p: 1 for p in PARTITIONS}
    groups = []
    for i, size in enumerate(sizes):
        partition = "gpu" if i % 7 == 3 else "bigmem" if i % 11 == 5 else "cpu"
        prefix = PARTITIONS[partition][0]
        lo = next_number[partition]
        width = HOST_DIGITS
        if i % 5 == 2 and size >= 4:  # two ranges with a gap of two unused names
            half = size // 2
            hostlist = (
                f"{prefix}[{lo:0{width}d}-{lo + half - 1:0{width}d},"
                f"{lo + half + 2:0{width}d}-{lo + size + 1:0{width}d}]"
            )
            next_number[partition] = lo + size + 2
        else:
            hostlist = f"{prefix}[{lo:0{width}d}-{lo + size - 1:0{width}d}]"
            next_number[partition] = lo + size
        groups.append(Group(f"{partition}-{i + 1:03d}", partition, hostlist, prefix, lo, size))
    return groups


def hosts_files(shape: Shape, groups: list[Group], rng: random.Random) -> dict[str, str]:
    files = {}
    for n, part in chunks(groups, GROUPS_PER_FILE):
        y = Yaml()
        y.add(0, "host_groups:")
        for g in part:
            _, counters, feature_sets = PARTITIONS[g.partition]
            index = int(g.name.rsplit("-", 1)[1])
            y.add(2, f"- name: {g.name}")
            y.add(4, f"description: {quoted(f'{g.partition} nodes, rack row {index}')}")
            y.add(4, f"hosts: {g.hostlist}")
            if counters:
                y.add(4, "counters:")
                for key, value in counters.items():
                    y.add(6, f"{key}: {value}")
            y.add(4, f"features: {flow(rng.choice(feature_sets))}")
            y.add(4, f"rack: r{index:03d}")
            y.add(4, f"switch: leaf-{index // 8:02d}")
            if index % 10 == 0 and g.size >= 4:  # the first two hosts have more memory
                y.add(4, "overrides:")
                y.add(6, f"{g.prefix}[{g.first:0{HOST_DIGITS}d}-{g.first + 1:0{HOST_DIGITS}d}]:")
                y.add(8, "counters: {mem: 1TiB}")
                y.add(8, f"features: {flow(['bigmem-lite', *rng.choice(feature_sets)])}")
        files[f"hosts/groups-{n:02d}.yaml"] = y.text()
    n_prov = provisioned_groups(shape.groups)
    if n_prov:
        y = Yaml()
        y.add(0, "host_groups:")
        for k in range(n_prov):
            lo = k * 4 * PROVISIONED_COUNT + 1
            hi = lo + 4 * PROVISIONED_COUNT - 1
            y.add(2, f"- name: burst-{k + 1:02d}")
            y.add(4, f"description: {quoted('Cloud-burst nodes in the shared cloud account')}")
            y.add(4, f"hosts: cb[{lo:05d}-{hi:05d}]")
            y.add(4, "counters: {slots: 32, mem: 128GiB}")
            y.add(4, "features: [cloud, avx2]")
            y.add(4, "provisioned:")
            y.add(6, "provider: cloud-burst")
            y.add(6, "template: c6i.8xlarge")
            if k % 2 == 0:
                y.add(6, f"count: {PROVISIONED_COUNT}")
            else:
                y.add(6, f"min: {PROVISIONED_COUNT}")
                y.add(6, f"max: {4 * PROVISIONED_COUNT}")
            y.add(6, "join_deadline: 15m")
        files["hosts/burst.yaml"] = y.text()
    return files


def site_file(shape: Shape) -> str:
    y = Yaml()
    y.add(0, "site:")
    y.add(2, f"name: synth-{shape.hosts}")
    y.add(2, f"description: {quoted('Synthetic site for benchmarks (benchmarks/gen_site.py)')}")
    y.add(2, "discovery: report")
    y.add(2, "join_deadline: 30m")
    y.add(2, "release_orphans: true")
    y.add(2, "defaults:")
    y.add(4, "host:")
    y.add(6, "counters: {slots: 64, mem: 256GiB}")
    y.add(2, "management: {volume-dir: correct, quota: correct}")
    y.add(2, "safety:")
    y.add(4, "max_changes: 5000")
    y.add(4, "min_entries: 20")
    y.add(4, "max_delete_fraction: {default: 0.25, host: 0.10}")
    y.add(2, 'protected: ["dataset/*"]')
    return y.text()


def volume_names(shape: Shape) -> list[str]:
    n = max(1, math.ceil(shape.users / USERS_PER_VOLUME))
    return [
        VOLUME_NAMES[i % len(VOLUME_NAMES)]
        + ("" if i < len(VOLUME_NAMES) else f"-{i // len(VOLUME_NAMES)}")
        for i in range(n)
    ]


def providers_files(shape: Shape, groups: list[Group]) -> dict[str, str]:
    """Providers (a cache provider per group, a directory provider per volume) and proxies."""
    y = Yaml()
    y.add(0, "providers:")
    y.add(2, "- name: controller")
    y.add(4, "kind: controller-map")
    external: list[str] = []
    for vol in volume_names(shape):
        external.append(f"fs-{vol}")
        y.add(2, f"- name: fs-{vol}")
        y.add(4, "kind: directory")
        y.add(4, f"params: {{base: fs/{vol}, quota_backend: ledger}}")
    for g in groups:
        external.append(f"cache-{g.name}")
        y.add(2, f"- name: cache-{g.name}")
        y.add(4, "kind: dataset-copy")
        y.add(
            4,
            f"params: {{cache_root: caches/{g.name}, location: group/{g.name}, "
            "source_base: sample-data}",
        )
    if provisioned_groups(shape.groups):
        external.append("cloud-burst")
        y.add(2, "- name: cloud-burst")
        y.add(4, "kind: exec")
        y.add(4, "command: [python3, -m, reconciler.testdoubles.sim_provider, cloud]")
        y.add(4, "account: shared")
        y.add(4, "timeout: 60s")
        y.add(4, 'credentials: {api_token: "env:BURST_API_TOKEN"}')
    external.append("flexlm")
    y.add(2, "- name: flexlm")
    y.add(4, "kind: exec")
    y.add(4, "command: [python3, -m, reconciler.testdoubles.sim_provider, license]")
    y.add(4, 'credentials: {password: "file:/etc/xce/secrets/flexlm"}')
    n_proxies = max(2, math.ceil(len(external) / PROVIDERS_PER_PROXY))
    active: list[list[str]] = [[] for _ in range(n_proxies)]
    standby: list[list[str]] = [[] for _ in range(n_proxies)]
    for j, name in enumerate(external):
        active[j % n_proxies].append(name)
        standby[(j + 1) % n_proxies].append(name)
    p = Yaml()
    p.add(0, "proxies:")
    for k in range(n_proxies):
        p.add(2, f"- name: proxy-{k + 1:02d}")
        p.add(4, f"host: adm{k + 1:02d}")
        p.add(4, f"active: {flow(active[k])}")
        p.add(4, f"standby: {flow(standby[k])}")
    return {"providers.yaml": y.text(), "proxies.yaml": p.text()}


def pools_file() -> str:
    y = Yaml()
    y.add(0, "pools:")
    y.add(2, "licenses:")
    for i, name in enumerate(LICENSES):
        y.add(4, f"- name: {name}")
        y.add(6, f"amount: {64 * (i + 1)}")
        if name == "matlab":
            y.add(6, "borrow: {provider: flexlm, max: 32}")
    y.add(2, "storage:")
    y.add(4, "- name: scratch")
    y.add(6, "capacity: 2PiB")
    y.add(4, "- name: archive")
    y.add(6, "capacity: 10PiB")
    y.add(2, "counters:")
    y.add(4, "- name: ib-uplink-gbps")
    y.add(6, "location: site")
    y.add(6, "amount: 800")
    y.add(0, "quotas:")
    y.add(2, "- pool: matlab")
    y.add(4, "project: p0000")
    y.add(4, "limit: 16")
    return y.text()


def _ceil_tib(n: int) -> str:
    return f"{max(1, math.ceil(n / TIB))}TiB"


def storage_files(shape: Shape, groups: list[Group], rng: random.Random) -> dict[str, str]:
    """Volumes sized to hold their quotas; one quota file per volume."""
    vols = volume_names(shape)
    user_quotas: dict[str, list[tuple[str, str]]] = {v: [] for v in vols}
    for i in range(shape.users):
        user_quotas[vols[i % len(vols)]].append((f"u{i:05d}", rng.choice(QUOTA_SIZES)))
    n_projects = max(1, shape.users // 200)
    project_quotas: dict[str, list[tuple[str, int]]] = {v: [] for v in vols}
    for j in range(n_projects):
        project_quotas[vols[j % len(vols)]].append((f"p{j:04d}", rng.randint(10, 200)))
    files = {}
    y = Yaml()
    y.add(0, "volumes:")
    for k, vol in enumerate(vols):
        users_bytes = sum(parse_size(s) for _, s in user_quotas[vol])
        projects_bytes = sum(t for _, t in project_quotas[vol]) * TIB
        mounted = groups if k == 0 else groups[(k - 1) % len(groups) :: len(vols)]
        y.add(2, f"- name: {vol}")
        y.add(4, f"description: {quoted(f'Shared volume {vol}: <user>/<jobid>/{{in,out,err}}')}")
        y.add(4, f"provider: fs-{vol}")
        y.add(4, f"path: /shared/{vol}")
        y.add(4, f"capacity: {_ceil_tib(max(users_bytes, projects_bytes) * 5 // 4)}")
        y.add(4, f"mounted_by: {flow(g.name for g in mounted)}")
        y.add(4, 'root: {mode: "0755", owner: root, group: root}')
        y.add(4, 'user_dirs: {mode: "0700", owner: user}')
        y.add(4, "retention: 14d")
        if k == 0:
            y.add(4, "default: true")
        y.add(4, "used_by:")  # one volume per queue (XCE414); the first is the default
        y.add(6, "queues: [normal, long]" if k == 0 else f"queues: [{vol}]")
        y.add(6, f"projects: {flow(p for p, _ in project_quotas[vol][:5])}")
        q = Yaml()
        q.add(0, "quotas:")
        bulk = [(u, size) for u, size in user_quotas[vol] if int(u[1:]) % 10]
        if bulk:
            q.add(2, f"- volume: {vol}")
            q.add(4, "users:")
            for user, size in bulk:
                q.add(6, f"{user}: {size}")
        for user, size in user_quotas[vol]:
            if int(user[1:]) % 10 == 0:  # every tenth user as a single item
                q.add(2, f"- volume: {vol}")
                q.add(4, f"user: {user}")
                q.add(4, f"limit: {size}")
        if project_quotas[vol]:
            q.add(2, f"- volume: {vol}")
            q.add(4, "projects:")
            for project, tib in project_quotas[vol]:
                q.add(6, f"{project}: {tib}TiB")
        files[f"storage/quotas-{vol}.yaml"] = q.text()
    files["storage/volumes.yaml"] = y.text()
    return files


def dataset_files(shape: Shape, groups: list[Group], rng: random.Random) -> dict[str, str]:
    """Datasets with copies at distinct group caches; each cache holds what it is charged."""
    used: dict[str, int] = {g.name: 0 for g in groups}
    names = [g.name for g in groups]
    files = {}
    items = list(range(shape.datasets))
    for n, part in chunks(items, DATASETS_PER_FILE):
        y = Yaml()
        y.add(0, "datasets:")
        for i in part:
            stem = DATASET_STEMS[i % len(DATASET_STEMS)]
            name = f"{stem}-{i:05d}"
            version = str(1 + i % 4) if i % 3 else f"v{2020 + i % 6}"
            size = rng.choice(DATASET_SIZES)
            ident = f"{name}@{version}"
            y.add(2, f"- name: {name}")
            y.add(4, f"version: {version}")
            y.add(4, f"size: {size}")
            y.add(4, f"digest: sha256:{hashlib.sha256(ident.encode()).hexdigest()}")
            y.add(4, f"source: {ident}")
            y.add(4, "copies:")
            for group in rng.sample(names, shape.copies):
                used[group] += parse_size(size)
                y.add(6, f"- location: group/{group}")
                y.add(8, f"provider: cache-{group}")
        files[f"datasets/datasets-{n:02d}.yaml"] = y.text()
    c = Yaml()
    c.add(0, "caches:")
    for group in names:
        c.add(2, f"- location: group/{group}")
        c.add(4, f"capacity: {_ceil_tib(used[group] * 3 // 2)}")
        c.add(4, f"provider: cache-{group}")
    files["datasets/caches.yaml"] = c.text()
    return files


def generate(shape: Shape) -> dict[str, str]:
    """The site's files: relative path -> YAML text."""
    rng = random.Random(shape.seed)
    groups = plan_groups(shape, rng)
    files = {"site.yaml": site_file(shape), "pools.yaml": pools_file()}
    files.update(hosts_files(shape, groups, rng))
    files.update(providers_files(shape, groups))
    files.update(storage_files(shape, groups, rng))
    files.update(dataset_files(shape, groups, rng))
    return files


def write_site(out_dir: Path, files: dict[str, str]) -> None:
    for rel, text in sorted(files.items()):
        path = out_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Write a synthetic valid site-config.")
    p.add_argument("out", type=Path, help="folder to write (created; existing files replaced)")
    p.add_argument("--hosts", type=int, default=100_000)
    p.add_argument("--groups", type=int, default=400)
    p.add_argument("--users", type=int, default=10_000)
    p.add_argument("--datasets", type=int, default=1_000)
    p.add_argument("--copies", type=int, default=5)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    shape = Shape(args.hosts, args.groups, args.users, args.datasets, args.copies, args.seed)
    why = check_shape(shape)
    if why:
        p.error(why)
    files = generate(shape)
    write_site(args.out, files)
    print(f"wrote {len(files)} files to {args.out}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
