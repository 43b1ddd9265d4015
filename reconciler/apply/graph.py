"""The plan's dependency graph, checked once before anything runs.

An action may start when every action it depends on is done; a dependency that is not in
the plan or a cycle would leave actions waiting forever, so both refuse the plan up front.
Linear in actions plus edges (Kahn's algorithm), so a plan of a million actions is fine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from compiler.core.problems import UserError
from reconciler.apply import codes
from reconciler.plan.model import Action

_REMAKE = "make the plan again with xce-plan; a plan file is never edited by hand"


@dataclass(frozen=True, slots=True)
class Graph:
    actions: Mapping[str, Action]  # by action id, in plan order
    dependents: Mapping[str, tuple[str, ...]]  # action id -> the actions waiting for it

    @classmethod
    def of(cls, actions: Sequence[Action]) -> Graph:
        """Index the plan; raise UserError (XCE825) for duplicates, dangling deps or cycles."""
        by_id: dict[str, Action] = {}
        for action in actions:
            if by_id.setdefault(action.id, action) is not action:
                raise _malformed(f"action {action.id} appears twice in the plan", action.id)
        waiting: dict[str, list[str]] = {a: [] for a in by_id}
        for action in actions:
            for dep in action.depends_on:
                if dep not in by_id:
                    raise _malformed(f"action {action.id} depends on {dep}, which is not in "
                                     "the plan", action.id)
                waiting[dep].append(action.id)
        graph = cls(by_id, {a: tuple(ds) for a, ds in waiting.items()})
        graph._check_acyclic()
        return graph

    def _check_acyclic(self) -> None:
        remaining = {a: len(action.depends_on) for a, action in self.actions.items()}
        ready = [a for a, n in remaining.items() if n == 0]
        seen = 0
        while ready:
            current = ready.pop()
            seen += 1
            for dependent in self.dependents[current]:
                remaining[dependent] -= 1
                if remaining[dependent] == 0:
                    ready.append(dependent)
        if seen < len(self.actions):
            stuck = sorted(a for a, n in remaining.items() if n > 0)
            shown = ", ".join(stuck[:5]) + (" …" if len(stuck) > 5 else "")
            raise _malformed(f"the plan's dependencies form a cycle among {len(stuck)} "
                             f"actions: {shown}", stuck[0])


def _malformed(message: str, subject: str) -> UserError:
    return UserError([codes.problem(codes.PLAN_MALFORMED, message, subject, _REMAKE)])
