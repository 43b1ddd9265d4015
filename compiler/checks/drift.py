"""The ``drift:`` sections checked across files: each provider a rule or route names exists,
``notify`` is written once, and waivers near or past their date are warned of.

A file's section was validated as it was read (``compiler.model.document``); what needs
every file — the providers, the one ``notify`` — is checked here, before anything is
written, so a mistake is reported with the others of the compile.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence

from compiler.contract.drift import DriftWaiver, Match
from compiler.core import codes
from compiler.core.codes import WAIVER_EXPIRED, WAIVER_EXPIRES_SOON
from compiler.core.names import did_you_mean
from compiler.core.problems import Problems, Severity, Where
from compiler.core.times import days_left, format_date
from compiler.model.document import SiteDocument
from compiler.model.drift import HINTS

WARN_DAYS = 7  # a drift waiver's expiry is warned of this many days ahead


def _known_provider(name: str | None, where: Where, providers: Sequence[str],
                    problems: Problems) -> None:
    if name is not None and name not in providers:
        problems.error(codes.UNKNOWN_NAME, f"unknown provider '{name}'",
                       did_you_mean(name, providers) or "providers: " + ", ".join(providers),
                       where)


def _check_expiry(w: DriftWaiver, where: Where, today: datetime.date,
                  problems: Problems) -> None:
    """A waiver past its date is a warning (its drift is reported again), and so is one
    whose date is a week away, by the policy waivers' rule (``days_left``)."""
    left = days_left(w.expires, today)
    on = format_date(w.expires)
    if left is None:
        problems.add(HINTS.problem(
            WAIVER_EXPIRED, f"the drift waiver of {w.owner} expired on {on}: xce-drift reports "
            "its drift again", severity=Severity.WARNING, where=where))
    elif left <= WARN_DAYS:
        problems.add(HINTS.problem(
            WAIVER_EXPIRES_SOON, f"the drift waiver of {w.owner} expires in {left} day(s), on "
            f"{on}", severity=Severity.WARNING, where=where))


def check_drift(doc: SiteDocument, problems: Problems, today: datetime.date) -> None:
    """The site's drift sections as one (see the module docstring)."""
    parts = doc.drift
    providers = sorted({p.item.name for p in doc.providers} | {doc.controller}
                       | doc.invalid_names.get(("providers",), set()))
    matchers: list[tuple[Match, Where]] = [(r.item, r.where) for r in parts.ignore]
    matchers += [(w.item, w.where) for w in parts.waivers]
    for rule, where in matchers:
        _known_provider(rule.provider, where.child("provider"), providers, problems)
    for w in parts.waivers:
        _check_expiry(w.item, w.where.child("expires"), today, problems)
    for n in parts.notify:
        for i, route in enumerate(n.item.routes or ()):
            _known_provider(route.provider, n.where.child("routes", i, "provider"), providers,
                            problems)
    for n in parts.notify[1:]:
        problems.error(codes.DEFINED_TWICE, "'drift.notify' is defined twice",
                       "keep one 'notify:' under 'drift:'", n.where.at_key(),
                       also=[parts.notify[0].where.at_key()])
