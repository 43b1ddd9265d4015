"""What an admin does next about drift that ``xce-apply`` does not correct.

A finding the plan corrects carries its fix command (detect.py); the others — orphans,
drift the plan only reports, providers that could not be seen — carry a next step instead,
by what the planner said about them (its note's words: one definition of why, in the
planner). Every command a step names exists, with the options written as they are
(docs/drift.md, "Next steps"); the first rule that fits decides, and each category has a
last rule, so no finding is left with "not corrected" alone.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from compiler.contract.vocabulary import EntryKind
from reconciler.drift.model import Category

FIX_PLAN = "drift-fix.plan"  # the plan file a fix or step command saves and applies
_CONFIG = "remove it from the config"
_KEEP = "keep it: add it to the config"


@dataclass(frozen=True, slots=True)
class _Step:
    """A step for findings of ``category`` (and ``kind``, when set) whose reason matches
    ``reason``. ``text`` may name ``{name}`` (the entry's name), ``{id}``, ``{kind}``,
    ``{provider}``, ``{site}`` (the site as the command line gave it) and ``{plan}``."""

    category: Category | None
    kind: EntryKind | None
    reason: re.Pattern[str]
    text: str

    def fits(self, category: Category, kind: str, reason: str) -> bool:
        return ((self.category is None or self.category is category)
                and (self.kind is None or self.kind == kind) and bool(self.reason.search(reason)))


def _step(category: Category | None, kind: EntryKind | None, reason: str, text: str) -> _Step:
    return _Step(category, kind, re.compile(reason), text)


ORPHAN, NOT_CORR, UNKNOWN = Category.ORPHAN, Category.NOT_CORRECTED, Category.UNKNOWN
STEPS = (
    _step(ORPHAN, EntryKind.HOST, r"^never joined", "check how {name} is provisioned (is it "
          "up, does its node manager reach the controller? on the embedded map: `xce-map "
          "report join {name}`); give it longer with `join_deadline` (site.yaml, or its "
          "group's), or " + _CONFIG),
    _step(NOT_CORR, EntryKind.HOST, r"^lost:", "check {name} (power, network, its node "
          "manager); once it is back it rejoins (on the embedded map: `xce-map report join "
          "{name}`, then `xce-map report available {name}`), or " + _CONFIG),
    _step(NOT_CORR, EntryKind.HOST, r"although in config",
          "undrain {name} in the scheduler, or " + _CONFIG),
    _step(NOT_CORR, EntryKind.INSTANCE, r"^lost:", "check the instance {name} at provider "
          "{provider}; if it is gone for good, remove its host from the config"),
    _step(None, None, r"needs the destroy permission \(--destroy\)", _KEEP + "; or remove "
          "it with its data: `xce-plan {site} --destroy --target {id} --out {plan} && "
          "xce-apply {plan}`"),
    _step(None, None, r"which never removes", _KEEP + "; or let xce-apply remove it: set "
          "`site.management.{kind}: correct-destructive`"),
    _step(None, None, r"\(management of [\w-]+: report\)", "correct it by hand, or let "
          "xce-apply correct it: set `site.management.{kind}: correct`"),
    _step(ORPHAN, EntryKind.INSTANCE, r"shared cloud account", "adopt it: add its host to "
          "the config; or delete the instance at provider {provider} by hand (xce-apply never "
          "removes it from a shared account)"),
    _step(ORPHAN, EntryKind.HOST, r"\(discovered\)", "add {name} to the config to keep it, "
          "or set `site.discovery` to admit or reject such hosts"),
    _step(ORPHAN, EntryKind.JOB_DIR, r"retention orphans: report", "delete it by hand, or "
          "set `orphans: remove` in the volume's `retention` to evict such directories"),
    _step(NOT_CORR, None, r"^reported by provider", "move it by hand to the provider the config "
          "binds it to, or bind it in the config to the provider that reports it"),
    _step(NOT_CORR, None, r"gave up after", "fix the template, then change `template` or raise "
          "`site.provisioning.attempts`"),
    _step(UNKNOWN, None, r"", "make provider {provider} answer (see why), then run xce-drift "
          "again: until then nothing of it is planned"),
    _step(ORPHAN, None, r"", _KEEP + "; or remove it by hand (xce-apply does not)"),
    _step(NOT_CORR, None, r"", "correct it by hand as the reason says, or change the config to "
          "what is live"),
)


def next_step(category: Category, entry: str, kind: str, provider: str | None, reason: str,
              site_args: tuple[str, ...]) -> str:
    """The step for a finding the plan does not correct ("" for one it does, or one that
    is not ours: co-managed)."""
    for step in STEPS:
        if step.fits(category, kind, reason):
            return step.text.format(
                name=entry.partition("/")[2], id=shlex.quote(entry), kind=kind,
                provider=provider or "(none)", site=shlex.join(site_args), plan=FIX_PLAN)
    return ""
