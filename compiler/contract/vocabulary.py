"""The contract's words, written once: entry kinds, entry states, management levels, discovery
policies and entry sources.

The compiler writes these words into build/supply-map.json and the reconciler compares them;
a word spelled twice drifts (a planner comparing ``"avaliable"`` never matches). Every other
module imports the names here (``EntryKind.HOST``, ``HostState.AVAILABLE``), which are plain
``str`` values (``StrEnum``), so maps, plans and messages hold exactly the same strings as
before. The pydantic models of site-config need ``Literal`` types (their JSON Schema and
error messages name the bare values): those are spelled here beside their enum, and an
import-time check keeps the two equal. tests/test_vocabulary.py fails on a module that
writes a kind, a host state or a level as a string (the few places where the word means
something else are listed there, each with why).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Literal, get_args


class EntryKind(StrEnum):
    """What a supply-map entry is: the first name of its id (``host/cn001``)."""

    HOST = "host"
    INSTANCE = "instance"
    COUNTER = "counter"
    HOST_GROUP = "host-group"
    LICENSE = "license"
    STORAGE_POOL = "storage-pool"
    DATASET = "dataset"
    DATASET_COPY = "dataset-copy"
    VOLUME = "volume"
    VOLUME_DIR = "volume-dir"
    JOB_DIR = "job-dir"
    QUOTA = "quota"
    # the controller's record of a job: read by the rules, never planned on
    JOB = "job"


# The kinds site-config may name (``site.management``, ``safety.max_delete_fraction``): every
# kind but ``job``, which the compiler never emits.
ConfigKind = Literal[
    "host", "instance", "counter", "host-group", "license", "storage-pool", "dataset",
    "dataset-copy", "volume", "volume-dir", "job-dir", "quota",
]


class HostState(StrEnum):
    """A host's lifecycle (PR-4): ``expected → joining → available → draining → drained →
    released``, plus ``lost``. An instance is ``available``, ``released`` or ``lost``."""

    EXPECTED = "expected"
    JOINING = "joining"
    AVAILABLE = "available"
    DRAINING = "draining"
    DRAINED = "drained"
    RELEASED = "released"
    LOST = "lost"


class CopyState(StrEnum):
    """A dataset copy at a location (PR-5)."""

    STAGING = "staging"
    AVAILABLE = "available"
    CORRUPT = "corrupt"
    EVICTING = "evicting"
    FAILED = "failed"
    LOST = "lost"


class JobState(StrEnum):
    """A job in the controller's record."""

    PENDING = "pending"
    RUNNING = "running"
    FINISHED = "finished"


# The state of every other kind: ``absent`` is never a state, it is not being in the map.
PRESENT = HostState.AVAILABLE

# The states a live entry of each kind may be in; a kind not listed is ``PRESENT`` only.
LIVE_STATES: Mapping[str, frozenset[str]] = {
    EntryKind.HOST: frozenset(HostState),
    EntryKind.INSTANCE: frozenset({HostState.AVAILABLE, HostState.RELEASED, HostState.LOST}),
    EntryKind.DATASET_COPY: frozenset(CopyState),
    EntryKind.JOB: frozenset(JobState),
}
OTHER_STATES = frozenset({PRESENT})

# Host states in which jobs may still run there, and whose workers report (PR-4).
RUNNING = frozenset({HostState.JOINING, HostState.AVAILABLE, HostState.DRAINING})


class Level(StrEnum):
    """How far the reconciler may act on a kind (``site.management``), in rising order."""

    OBSERVE = "observe"
    REPORT = "report"
    CORRECT = "correct"
    CORRECT_DESTRUCTIVE = "correct-destructive"


ManagementLevel = Literal["observe", "report", "correct", "correct-destructive"]
LEVELS = tuple(Level)


class Policy(StrEnum):
    """What becomes of a host that joins although no entry expects it (``site.discovery``)."""

    REPORT = "report"
    ADMIT = "admit"
    REJECT = "reject"


DiscoveryPolicy = Literal["report", "admit", "reject"]
OtherwisePolicy = Literal["report", "reject"]  # for the hosts a policy's names do not match
POLICIES = tuple(Policy)
OTHERWISE = (Policy.REPORT, Policy.REJECT)


class Source(StrEnum):
    """Where an entry comes from (PR-1, PR-4)."""

    CONFIG = "config"
    PROVISIONED = "provisioned"
    PROVISIONER = "provisioner"
    REPORTER = "reporter"
    DISCOVERED = "discovered"


SOURCES = tuple(Source)


def _same(literal: object, enum: type[StrEnum], *, but: frozenset[str] = frozenset()) -> None:
    """The ``Literal`` spelling of a word list is its enum's, less ``but``."""
    if set(get_args(literal)) != {m.value for m in enum} - but:
        raise AssertionError(f"{enum.__name__} and its Literal spelling differ")


_same(ConfigKind, EntryKind, but=frozenset({EntryKind.JOB}))
_same(ManagementLevel, Level)
_same(DiscoveryPolicy, Policy)
_same(OtherwisePolicy, Policy, but=frozenset({Policy.ADMIT}))
