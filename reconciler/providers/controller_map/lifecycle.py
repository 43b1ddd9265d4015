"""The host lifecycle of PR-4 as one table, so the provider and the reporter agree on it.

``expected → joining → available → draining → drained → released``, plus ``lost``.
Reporter events (a worker join, the node manager) record what happened to a machine;
plan actions (drain, release, admit, reject) are what the applier asks for. Each event
names the states it moves from and the states in which it is already done (a repeat is
a no-op, not an error, because reporters and appliers retry).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from compiler.contract.vocabulary import HostState, Source


class Event(StrEnum):
    # reporter events: the last three are named after the state they report
    JOIN = "join"
    AVAILABLE = HostState.AVAILABLE.value
    LOST = HostState.LOST.value
    DRAINED = HostState.DRAINED.value
    # plan actions
    DRAIN = "drain"
    RELEASE = "release"
    ADMIT = "admit"
    REJECT = "reject"


REPORTER_EVENTS = (Event.JOIN, Event.AVAILABLE, Event.LOST, Event.DRAINED)
PLAN_ACTIONS = frozenset({Event.DRAIN, Event.RELEASE, Event.ADMIT, Event.REJECT})

S = HostState


@dataclass(frozen=True, slots=True)
class _Rule:
    moves: dict[HostState, HostState]
    done: frozenset[HostState]
    why: str  # what the event needs, for the refusal message


_RULES: dict[Event, _Rule] = {
    Event.JOIN: _Rule(
        {S.EXPECTED: S.JOINING, S.LOST: S.JOINING},
        frozenset({S.JOINING, S.AVAILABLE, S.DRAINING, S.DRAINED}),
        "a released host must be created again by the plan before it can join",
    ),
    Event.AVAILABLE: _Rule(
        {S.JOINING: S.AVAILABLE},
        frozenset({S.AVAILABLE}),
        "a host becomes available only after it joined; report join first",
    ),
    Event.LOST: _Rule(
        {S.JOINING: S.LOST, S.AVAILABLE: S.LOST, S.DRAINING: S.LOST, S.DRAINED: S.LOST},
        frozenset({S.LOST}),
        "only a host that has joined can be lost",
    ),
    Event.DRAINED: _Rule(
        {S.DRAINING: S.DRAINED},
        frozenset({S.DRAINED}),
        "only a draining host can finish draining; the plan drains it first",
    ),
    Event.DRAIN: _Rule(
        {S.JOINING: S.DRAINING, S.AVAILABLE: S.DRAINING},
        frozenset({S.DRAINING, S.DRAINED}),
        "only a joining or available host can be drained",
    ),
    Event.RELEASE: _Rule(
        {S.DRAINED: S.RELEASED, S.EXPECTED: S.RELEASED, S.LOST: S.RELEASED},
        frozenset({S.RELEASED}),
        "release needs a drained, lost or never-joined (expected) host; drain it first",
    ),
    Event.ADMIT: _Rule(
        {S.JOINING: S.AVAILABLE},
        frozenset(),
        "only a discovered host awaiting admission (joining) can be admitted",
    ),
    Event.REJECT: _Rule(
        {S.JOINING: S.RELEASED, S.LOST: S.RELEASED},
        frozenset({S.RELEASED}),
        "only a discovered host awaiting admission can be rejected",
    ),
}

# States in which a host runs nothing of ours, so its entry may be removed outright.
RESTING = frozenset({S.EXPECTED, S.DRAINED, S.RELEASED, S.LOST})
# States in which a host's worker is connected to the controller: after a restart it
# joins again (P8: ``spec.seen`` tells whether it has).
REPORTING = (S.JOINING, S.AVAILABLE, S.DRAINING)


class Refused(Exception):
    """An event that the host's current state does not allow; the message says why."""


def awaiting_admission(source: str, owner: str | None) -> bool:
    """A discovered host nobody has admitted yet (it joined, but no config claims it)."""
    return source == Source.DISCOVERED and owner is None


def next_state(host: str, state: str, event: Event, *, awaiting: bool) -> HostState | None:
    """The state after ``event``, or None when the host is already there; raises Refused."""
    current = HostState(state)
    if event is Event.AVAILABLE and awaiting:
        raise Refused(f"{host} is a discovered host awaiting admission; the plan admits it")
    if event in (Event.ADMIT, Event.REJECT) and not awaiting:
        raise Refused(f"'{event.value}' is not allowed for {host}: {_RULES[event].why}")
    rule = _RULES[event]
    if current in rule.done:
        return None
    target = rule.moves.get(current)
    if target is None:
        raise Refused(f"{host} is {current.value}, so '{event.value}' is not allowed: {rule.why}")
    return target
