"""The ``site:`` section: identity, discovery policy, join deadline and plan safety (PR-4, P6)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag

from compiler.contract.bindings import (
    DEFAULT_INVENTORY_MAX_AGE,
    DEFAULT_LEASE_TTL,
    DEFAULT_PUBLISH_INTERVAL,
)
from compiler.contract.settings import PlanSettings, SettleWait, UnreviewedApply
from compiler.contract.vocabulary import ConfigKind, ManagementLevel
from compiler.core.types import (
    Attempts,
    Count,
    Counters,
    Description,
    Duration,
    HoursDuration,
    MinutesDuration,
    Name,
    PositiveDuration,
    Strict,
)
from compiler.model.discovery import AnyOf, DiscoverySetting
from compiler.model.hosts import SHORTHANDS, TopologyKey

# The defaults are the contract's, the one place they are defined (docs/plan.md).
_DEFAULT = PlanSettings()


Fraction = Annotated[float, Field(ge=0, le=1)]


class InventoryLoss(Strict):
    """How much of a kind a provider's inventory may lose between two trusted reads: a loss
    above ``fraction`` of what it reported, and of at least ``count`` entries, is too much."""

    fraction: Fraction | None = Field(
        default=None, description="the share of a kind it may lose (default 0.2)",
        examples=[0.2])
    count: Count | None = Field(
        default=None, description="a smaller loss than this many entries is always accepted "
        "(default 10)", examples=[10])


class Safety(Strict):
    """octoDNS-style thresholds: a plan that changes too much at once is refused.

    Unset values take the planner's defaults (docs/plan.md, "Guards"), the one place they
    are defined: no limit on changes, 10 entries, 0.3 deleted, 0.5 created.
    """

    max_changes: Count | None = Field(
        default=None,
        description="a plan with more actions is refused (without --force); default no limit",
        examples=[5000],
    )
    min_entries: Count | None = Field(
        default=None,
        description="the fraction guards apply once a kind has at least this many entries "
        "(default 10)",
        examples=[20],
    )
    max_delete_fraction: dict[ConfigKind | Literal["default"], Fraction] = Field(
        default_factory=dict,
        description="by entry kind or 'default': a plan that removes more than this fraction "
        "of the live entries is refused (default 0.3)",
        examples=[{"default": 0.25, "host": 0.1}],
    )
    max_create_fraction: Fraction | None = Field(
        default=None,
        description="a plan that creates more than this fraction of a provider's desired "
        "entries is refused (default 0.5)",
        examples=[0.5],
    )
    max_inventory_loss: dict[str, InventoryLoss] = Field(
        default_factory=dict,
        description="by provider name or 'default': an inventory that lost more of a kind since "
        "the last trusted read is not trusted (xce-plan --accept-shrink NAME)",
        examples=[{"default": {"fraction": 0.2, "count": 10},
                   "cloud-burst": {"fraction": 0.5, "count": 4}}],
    )


class Settle(Strict):
    """The settle window (P8): after a provider's session changes (a controller restart, a
    proxy failover), orphan and never-joined removals resting on it wait."""

    wait: SettleWait = Field(
        default=_DEFAULT.settle.wait,
        description="window: wait the whole window; rejoin: wait until every worker the "
        "provider holds has reported again since, at most the window",
        examples=["rejoin"],
    )
    window: MinutesDuration = Field(
        default=_DEFAULT.settle.window,
        description="how long after the session began the removals wait (0: not at all)",
        examples=["10m"],
    )


class Provisioning(Strict):
    """Re-provisioning an instance whose host never joined (P6): a backoff that doubles per
    failure, and a limit. Unset values take the planner's defaults (docs/plan.md,
    "Provisioning backoff"), the one place they are defined: 3 attempts, 15m, 6h."""

    attempts: Attempts | None = Field(
        default=None,
        description="provisioning attempts whose host never joins before the plan gives up "
        "(default 3)",
        examples=[3],
    )
    backoff: MinutesDuration | None = Field(
        default=None,
        description="the wait after the first failure, doubled after each further one "
        "(default 15m)",
        examples=["15m"],
    )
    max_backoff: HoursDuration | None = Field(
        default=None, description="the longest wait between two attempts (default 6h)",
        examples=["6h"],
    )


def _serve_form(value: Any) -> str:
    """Which spelling ``serve`` is, so that a wrong value gets one error, not one per form
    (the tags are worded as pydantic's union branches, which problems leave out)."""
    return "list[providers]" if isinstance(value, list) else "literal[serve]"


Serve = Annotated[
    Annotated[Literal["none", "all"], Tag("literal[serve]")]
    | Annotated[list[Name], Tag("list[providers]")],
    Discriminator(_serve_form),
    AnyOf(),
]


class ProxiesSetting(Strict):
    """Where providers run (issue 24): in-process in xce-plan and xce-apply, until a site
    turns proxies on; then a served provider runs only inside its proxy, which publishes its
    inventory and takes its calls through the state store. compiler/checks/providers.py
    checks it against the providers; compiler/emit/bindings.py writes it."""

    serve: Serve = Field(
        default="none",
        description="the providers that run only inside their proxy: none, all (every one "
        "with a proxy), or a list of provider names",
        examples=["all", ["shared-fs", "cloud-burst"]],
    )
    inventory_max_age: MinutesDuration = Field(
        default=DEFAULT_INVENTORY_MAX_AGE,
        description="a published inventory older than this is unknown: nothing is planned "
        "from it",
        examples=["10m"],
    )
    publish_interval: PositiveDuration = Field(
        default=DEFAULT_PUBLISH_INTERVAL,
        description="how often the active proxy reads and publishes each inventory",
        examples=["1m"],
    )
    lease_ttl: Duration = Field(
        default=DEFAULT_LEASE_TTL,
        description="a proxy's hold on a provider lapses this long after its last renewal, "
        "and a standby takes over",
        examples=["15s"],
    )


class HostDefaults(Strict):
    counters: Counters = Field(
        default_factory=dict,
        description="counters every host gets; a group's counters replace them key by key",
        examples=[{"slots": 64, "mem": "256GiB"}],
    )
    features: list[Name] = Field(
        default_factory=list,
        description="features every host gets, in addition to its group's",
        examples=[["ib-hdr"]],
    )


class SiteDefaults(Strict):
    host: HostDefaults = Field(
        default_factory=HostDefaults,
        description="what every host gets: counters and features",
        examples=[{"counters": {"slots": 64}, "features": ["ib-hdr"]}],
    )


class Site(Strict):
    name: Name = Field(
        description="the site; every entry's owner tag is site/<name>", examples=["hpc-east"]
    )
    description: Description = Field(
        default="", description="what the site is, for people", examples=["East campus HPC cluster"]
    )
    discovery: DiscoverySetting = Field(
        default=_DEFAULT.discovery.policy.value,
        description="what to do with a host that joins but no entry expects: a policy, or a "
        "mapping with name patterns, a group and counters",
        examples=["report", {"policy": "admit", "names": ["burst*"], "group": "burst"}],
    )
    join_deadline: MinutesDuration = Field(
        default=_DEFAULT.join_deadline,
        description="how long an expected host may take to join before it is an orphan",
        examples=["30m"],
    )
    release_orphans: bool = Field(
        default=_DEFAULT.release_orphans,
        description="release provisioned instances whose host never joined by the deadline",
        examples=[True],
    )
    settle: Settle = Field(
        default_factory=Settle,
        description="after a provider restarts or fails over, how long orphan removals wait",
        examples=[{"wait": "rejoin", "window": "10m"}],
    )
    provisioning: Provisioning = Field(
        default_factory=Provisioning,
        description="how often an instance whose host never joined is provisioned again",
        examples=[{"attempts": 3, "backoff": "15m", "max_backoff": "6h"}],
    )
    defaults: SiteDefaults = Field(
        default_factory=SiteDefaults,
        description="what every host gets unless its group says otherwise",
        examples=[{"host": {"counters": {"slots": 64, "mem": "256GiB"}}}],
    )
    topology: list[TopologyKey] = Field(
        default_factory=lambda: list(SHORTHANDS),
        description="the site's topology keys: the only keys a host group's topology may use",
        examples=[["rack", "switch", "block"]],
    )
    management: dict[ConfigKind, ManagementLevel] = Field(
        default_factory=dict,
        description="how far the reconciler may act, by entry kind",
        examples=[{"volume-dir": "correct"}],
    )
    safety: Safety = Field(
        default_factory=Safety,
        description="thresholds above which a plan is refused",
        examples=[{"max_changes": 5000, "max_delete_fraction": {"default": 0.25}}],
    )
    protected: list[str] = Field(
        default_factory=list,
        description="entry ids (fnmatch globs) that a plan never removes, even with --force",
        examples=[["volume/shared", "dataset/*"]],
    )
    proxies: ProxiesSetting = Field(
        default_factory=ProxiesSetting,
        description="where providers run: in-process, or only inside their proxy",
        examples=[{"serve": "all", "inventory_max_age": "10m"}],
    )
    unreviewed_apply: UnreviewedApply = Field(
        default=_DEFAULT.unreviewed_apply,
        description="xce-apply --reviewed with no reviewed plan for the config: refuse "
        "(exit 4), or allow: plan and apply it, saying so in the report",
        examples=["refuse"],
    )
