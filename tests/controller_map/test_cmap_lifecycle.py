"""The PR-4 host lifecycle table, checked against every (state, event) pair."""

from __future__ import annotations

import itertools

import pytest

from compiler.contract.vocabulary import HostState
from reconciler.providers.controller_map.lifecycle import Event, Refused, next_state

# (state, event) -> state after; None = already done (no change). Pairs not listed refuse.
LEGAL: dict[tuple[str, str], str | None] = {
    ("expected", "join"): "joining",
    ("lost", "join"): "joining",
    ("joining", "join"): None,
    ("available", "join"): None,
    ("draining", "join"): None,
    ("drained", "join"): None,
    ("joining", "available"): "available",
    ("available", "available"): None,
    ("joining", "lost"): "lost",
    ("available", "lost"): "lost",
    ("draining", "lost"): "lost",
    ("drained", "lost"): "lost",
    ("lost", "lost"): None,
    ("draining", "drained"): "drained",
    ("drained", "drained"): None,
    ("joining", "drain"): "draining",
    ("available", "drain"): "draining",
    ("draining", "drain"): None,
    ("drained", "drain"): None,
    ("drained", "release"): "released",
    ("expected", "release"): "released",
    ("lost", "release"): "released",
    ("released", "release"): None,
}
KNOWN_HOST_EVENTS = [e for e in Event if e not in (Event.ADMIT, Event.REJECT)]


@pytest.mark.parametrize(
    ("state", "event"), list(itertools.product(list(HostState), KNOWN_HOST_EVENTS))
)
def test_known_host_follows_the_table(state: HostState, event: Event) -> None:
    key = (state.value, event.value)
    if key in LEGAL:
        assert next_state("host/cn1", state, event, awaiting=False) == LEGAL[key]
    else:
        with pytest.raises(Refused, match="host/cn1"):
            next_state("host/cn1", state, event, awaiting=False)


def test_release_is_refused_while_the_host_runs_jobs() -> None:
    for state in ("joining", "available", "draining"):
        with pytest.raises(Refused, match="drain it first"):
            next_state("host/cn1", state, Event.RELEASE, awaiting=False)


def test_admission_applies_only_to_a_discovered_host_awaiting_it() -> None:
    assert next_state("host/x", "joining", Event.ADMIT, awaiting=True) == "available"
    assert next_state("host/x", "joining", Event.REJECT, awaiting=True) == "released"
    assert next_state("host/x", "lost", Event.REJECT, awaiting=True) == "released"
    with pytest.raises(Refused):
        next_state("host/x", "joining", Event.ADMIT, awaiting=False)
    with pytest.raises(Refused):
        next_state("host/x", "lost", Event.ADMIT, awaiting=True)
    with pytest.raises(Refused, match="awaiting admission"):
        next_state("host/x", "joining", Event.AVAILABLE, awaiting=True)
