"""Provisioning attempts as the planner reads them: what the state store recorded of
instances whose host never joined, handed to the planner as data (its backoff decides from
them), so the planner never reads the store itself."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class ProvisionAttempts:
    """The provisioning attempts of one instance entry whose host never joined (P6), in a
    row: ``failures`` of them, the last recorded at ``failed_at``, made from ``template``.
    ``instance`` names the instance released last (its ``spec.since``, or the digest of its
    entry), so recording the same release again — a resumed apply, a release retried after
    it failed — counts nothing twice."""

    entry: str
    failures: int
    failed_at: datetime
    template: str
    instance: str
