"""The settle window (P8): an orphan removal waits while a provider it rests on settles.

A provider may report since when it serves its present session (``SupplyMap.sessions``):
the controller restarted, a proxy failed over. Right after that, what it reports may lag
behind what is true: workers that have not reported since the restart look silent, a
standby's view of a cloud account may be behind. A removal of something no config claims
(a never-joined host's instance, an unclaimed instance, a discovered host, an orphan job
directory) would act on that unsettled view, so it waits: the site's whole window
(``wait: window``), or until the workers the provider holds have reported again since the
session began (``wait: rejoin``), at most the window. What it waits for goes in ``pending``.
"""

from __future__ import annotations

from collections.abc import Mapping

from compiler.contract.settings import SettlePolicy
from compiler.contract.supply_map import Entry, Session
from compiler.contract.vocabulary import RUNNING, EntryKind
from compiler.core.hostlist import fold_subjects
from compiler.core.times import format_utc
from compiler.core.units import duration_text

WORKERS = RUNNING  # hosts whose worker reports (spec.seen): where jobs may run
FOLDED_CHARS = 80  # the workers not rejoined, folded as a hostlist, if it is this short;
SHOWN_NAMES = 8  # else the first names and the count


def settling(policy: SettlePolicy, sessions: Mapping[str, Session],
             live: Mapping[str, Entry], now: float) -> dict[str, str]:
    """Provider -> why removals resting on it wait, for each provider settling at ``now``.

    Once per plan: the rejoin check is one pass over the live map, for all providers.
    A provider that holds no host at all (a cloud account) has no workers to wait for, so
    under ``rejoin`` it waits the window."""
    window = policy.window
    started = {p: s for p, s in sessions.items() if now < s.since + window}
    if not started or policy.wait == "window":
        return {p: _left(p, s, now, window) for p, s in started.items()}
    workers, silent = _rejoins(started, live)
    waits: dict[str, str] = {}
    for provider, session in started.items():
        if provider not in workers:
            waits[provider] = _left(provider, session, now, window)
        elif silent[provider]:
            waits[provider] = _rejoin(provider, session, now, window, workers[provider],
                                      silent[provider])
    return waits


def _rejoins(started: Mapping[str, Session],
             live: Mapping[str, Entry]) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Per provider that holds hosts: how many are workers, and those not seen since."""
    workers: dict[str, int] = {}
    silent: dict[str, list[str]] = {}
    for entry in live.values():
        provider = entry.provider
        if entry.kind != EntryKind.HOST or provider is None or provider not in started:
            continue
        missing = silent.setdefault(provider, [])
        workers.setdefault(provider, 0)
        if entry.state not in WORKERS:
            continue
        workers[provider] += 1
        seen = entry.spec.get("seen")
        if isinstance(seen, bool) or not isinstance(seen, int | float) or (
            seen < started[provider].since
        ):
            missing.append(entry.id.partition("/")[2])
    return workers, silent


def _began(provider: str, session: Session) -> str:
    at = format_utc(session.since)
    return (f"waiting for provider {provider} to settle after its session began at {at} "
            "(a restart or failover)")


def _left(provider: str, session: Session, now: float, window: int) -> str:
    left = session.since + window - now
    return (f"{_began(provider, session)}: {duration_text(left, 'words')} left of its settle "
            f"window ({duration_text(window, 'words')})")


def _rejoin(provider: str, session: Session, now: float, window: int, workers: int,
            silent: list[str]) -> str:
    left = session.since + window - now
    return (f"{_began(provider, session)}: {len(silent)} of {workers} workers have not "
            f"reported since: {_few(silent)} (at most {duration_text(left, 'words')} "
            f"more; settle window {duration_text(window, 'words')})")


def _few(names: list[str]) -> str:
    """A few names: all of them folded as a hostlist when that is short, else the first."""
    folded = fold_subjects(names)
    if len(folded) <= FOLDED_CHARS:
        return folded
    return f"{fold_subjects(sorted(names)[:SHOWN_NAMES])} … ({len(names)} in all)"
