"""Waivers: the only way a site loosens a guardrail — named, with a reason, and expiring.

An expired waiver is an error (not silently ignored) and one that expires soon is a
warning. One that waives nothing is a warning too, so stale waivers get removed; that is
found where the guardrails are enforced (``compiler.policy.enforce``), which knows what
each waiver allows.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from typing import Any

from compiler.core.names import POLICY_NAME_RE, did_you_mean
from compiler.core.problems import Problems, Where
from compiler.core.times import days_left, format_date
from compiler.policy import codes
from compiler.policy.model import Guardrail, Waiver, WaiverLimits
from compiler.policy.reader import Fields


def read_waiver(item: Any, where: Where, problems: Problems) -> Waiver | None:
    f = Fields.of(
        item,
        where,
        problems,
        "a waiver",
        required=("name", "guardrail", "role", "opcodes", "reason", "expires"),
    )
    if f is None:
        return None
    name = f.string("name", POLICY_NAME_RE, "waiver names are lowercase words joined by '-'")
    guardrail = f.ref("guardrail")
    role = f.ref("role")
    opcodes = f.refs("opcodes")
    reason = f.string("reason")
    expires = f.date("expires")
    if name is None or guardrail is None or role is None or reason is None or expires is None:
        return None
    if not opcodes:
        return None
    return Waiver(name, guardrail, role, opcodes, reason, expires, f.at("expires"), where)


def valid_waivers(
    waivers: Iterable[Waiver],
    guardrails: Mapping[str, Guardrail],
    limits: WaiverLimits,
    today: datetime.date,
    problems: Problems,
) -> list[Waiver]:
    """The waivers in force today; every other one is reported."""
    seen: dict[str, Waiver] = {}
    out: list[Waiver] = []
    for w in waivers:
        if w.name in seen:
            problems.error(
                codes.WAIVER_TWICE,
                f"waiver '{w.name}' is defined twice",
                "keep one",
                w.where.child("name"),
                also=(seen[w.name].where,),
            )
            continue
        seen[w.name] = w
        if _waivable(w, guardrails, problems) and _in_date(w, limits, today, problems):
            out.append(w)
    return out


def _waivable(w: Waiver, guardrails: Mapping[str, Guardrail], problems: Problems) -> bool:
    """Whether the guardrail the waiver names exists and may be waived (reported if not)."""
    rail = guardrails.get(w.guardrail.text)
    if rail is None:
        problems.error(
            codes.WAIVER_UNKNOWN_GUARDRAIL,
            f"waiver '{w.name}' names unknown guardrail '{w.guardrail.text}'",
            did_you_mean(w.guardrail.text, guardrails) or "guardrails: " + ", ".join(guardrails),
            w.guardrail.where,
        )
        return False
    if not rail.roles:
        problems.error(
            codes.WAIVER_UNKNOWN_GUARDRAIL,
            f"guardrail '{rail.name}' cannot be waived",
            "mark the opcode 'unused' in the catalog, or grant it to a role",
            w.guardrail.where,
            also=(rail.where,),
        )
        return False
    return True


def _in_date(w: Waiver, limits: WaiverLimits, today: datetime.date, problems: Problems) -> bool:
    """Whether the waiver is unexpired and within the longest term allowed (reported if
    not); one close to its expiry is in force with a warning."""
    left = days_left(w.expires, today)
    if left is None:
        problems.error(
            codes.WAIVER_EXPIRED,
            f"waiver '{w.name}' expired on {format_date(w.expires)}",
            "remove the waiver and the grant it allowed, or renew it after review",
            w.expires_where,
        )
        return False
    horizon = today + datetime.timedelta(days=limits.max_days)
    if w.expires > horizon:
        problems.error(
            codes.WAIVER_TOO_LONG,
            f"waiver '{w.name}' expires {format_date(w.expires)}, more "
            f"than {limits.max_days} days from today",
            f"set an expiry on or before {format_date(horizon)}",
            w.expires_where,
        )
        return False
    if left <= limits.warn_days:
        problems.warning(
            codes.WAIVER_EXPIRES_SOON,
            f"waiver '{w.name}' expires in {left} day(s)",
            "renew it after review, or remove what it allows",
            w.expires_where,
        )
    return True
