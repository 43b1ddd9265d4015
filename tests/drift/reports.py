"""A drift report with every kind of drift, made by hand for the rendering tests."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from reconciler.drift.model import Category, Changed, DriftReport, FieldDiff, Finding, SinceLast
from reconciler.drift.steps import next_step

AT = datetime(2026, 3, 4, 9, 30, tzinfo=UTC)
FIX = "xce-plan site --target {} --out drift-fix.plan && xce-apply drift-fix.plan"


def sample() -> DriftReport:
    """Missing, differing, to-be-removed, orphan, not corrected, co-managed and unknown
    drift, some with their age, and news since the last notification."""
    days = timedelta(days=1)
    mode = Finding(Category.DIFFERS, "volume-dir/shared/alice", "volume-dir", "shared-fs",
                   "differs in spec.mode", "available", "available",
                   (FieldDiff("spec.mode", "0700", "0755"),),
                   fix=FIX.format("volume-dir/shared/alice"), since=AT - 3 * days)
    findings = (
        Finding(Category.NOT_CORRECTED, "host/cn02", "host", "controller",
                "drained although in config (drained by an admin?)", "available", "drained",
                (FieldDiff("state", "available", "drained"),), since=AT - 5 * days),
        Finding(Category.EXTRA, "counter/slots@host/cn09", "counter", "controller",
                "not in config", None, "available", since=AT - timedelta(hours=5),
                fix="xce-plan site --target counter/slots@host/cn09 --out drift-fix.plan "
                "&& xce-apply --allow-destroy drift-fix.plan"),
        Finding(Category.CO_MANAGED, "license/ansys@site", "license", "controller",
                "not in config; owned by site/west, so left alone", None, "available"),
        Finding(Category.UNKNOWN, "provider/cloud", "provider", "cloud",
                "did not report: UNAVAILABLE: simulated outage", count=2, since=AT - days),
        Finding(Category.NOT_CORRECTED, "quota/shared/user/alice", "quota", "shared-fs",
                "would update: raise quota from 10 to 15 (management of quota: report)",
                "available", "available", (FieldDiff("amount", 15, 10),), since=AT - 2 * days),
        Finding(Category.ORPHAN, "volume-dir/shared/carol", "volume-dir", "shared-fs",
                "would delete: not in config; deleting users' data needs the destroy "
                "permission (--destroy)", None, "available", since=AT - 9 * days),
        mode,
        Finding(Category.MISSING, "volume-dir/shared/bob", "volume-dir", "shared-fs",
                "not in the live map", "available", None, fix=FIX.format("volume-dir/shared/bob"),
                since=AT - timedelta(minutes=20)),
    )
    findings = tuple(stepped(f) for f in findings)
    before = Finding(Category.DIFFERS, mode.entry, mode.kind, mode.provider, mode.reason,
                     "available", "available", (FieldDiff("spec.mode", "0700", "0750"),))
    news = SinceLast(new=(findings[-1],), changed=(Changed(before, mode),),
                     resolved=(Finding(Category.MISSING, "volume/scratch", "volume", "shared-fs",
                                       "not in the live map", "available", None),),
                     last_notified=AT - days)
    return DriftReport("hpc-east", AT, findings, "4f2a9c1d0b7e6a5f4e3d", since_last=news,
                       recorded=True)


def stepped(f: Finding) -> Finding:
    """``f`` with the next step detect.py gives a finding the plan does not correct."""
    if f.fix is not None or f.category is Category.CO_MANAGED:
        return f
    return replace(f, step=next_step(f.category, f.entry, f.kind, f.provider, f.reason,
                                     ("site",)))
