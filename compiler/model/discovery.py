"""``site.discovery``: what becomes of a host that joins although no entry expects it (PR-4).

Either a policy word (``report``, ``admit``, ``reject``), as sites have always written it,
or a mapping that limits the policy to name patterns and says what an admitted host gets:

    discovery:
      policy: admit
      names: ["burst*", "cn[0001-0100]"]   # hostlists or globs (compiler/core/name_patterns.py)
      otherwise: report                     # the hosts the names do not match (default report)
      group: burst                          # an admitted host's group, and its features
      counters: {slots: 32}                 # default: the group's counters

The mapping's checks against the rest of the site are in compiler/checks/discovery.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Discriminator, Field, GetJsonSchemaHandler, Tag
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from compiler.core.types import Counters, Name, Strict

if TYPE_CHECKING:  # the document holds the site section, which holds this
    from compiler.model.document import Located
    from compiler.model.hosts import HostGroup

DiscoveryPolicy = Literal["report", "admit", "reject"]
NamePattern = Annotated[str, Field(min_length=1)]


class Discovery(Strict):
    policy: DiscoveryPolicy = Field(
        description="what a discovered host that the names match gets (every one, without "
        "names): reported, admitted or rejected",
        examples=["admit"],
    )
    names: list[NamePattern] = Field(
        default_factory=list,
        description="the hosts the policy applies to: hostlists (cn[0001-0100]) or globs "
        "with * and ? (burst*)",
        examples=[["burst*", "cn[0001-0100]"]],
    )
    otherwise: Literal["report", "reject"] | None = Field(
        default=None,
        description="what a discovered host that no name matches gets (default report)",
        examples=["report"],
    )
    group: Name | None = Field(
        default=None,
        description="the host group an admitted host joins: its group attribute and the "
        "group's features",
        examples=["burst"],
    )
    counters: Counters | None = Field(
        default=None,
        description="counters each admitted host gets (default: its group's)",
        examples=[{"slots": 32, "mem": "128GiB"}],
    )


def _form(value: Any) -> str:
    """Which spelling ``value`` is. The tags are worded as pydantic's own union branches
    (``literal[…]``), which the error translation drops from a problem's place."""
    return "mapping[discovery]" if isinstance(value, Mapping) else "literal[policy]"


class _AnyOf:
    """The editor schema says ``anyOf`` where pydantic says ``oneOf``: the keywords editors
    understand (tests/compiler/test_schema_file.py) lack it, and a word and a mapping never
    both fit, so the two mean the same here."""

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        if "oneOf" in schema:
            schema["anyOf"] = schema.pop("oneOf")
        return schema


DiscoverySetting = Annotated[
    Annotated[DiscoveryPolicy, Tag("literal[policy]")]
    | Annotated[Discovery, Tag("mapping[discovery]")],
    Discriminator(_form),
    _AnyOf(),
]


def discovery_setting(
    discovery: DiscoveryPolicy | Discovery, groups: Iterable[Located[HostGroup]],
    default_counters: Mapping[str, int],
) -> str | dict[str, Any]:
    """``settings.discovery`` of the compiled map: the word as written (so the maps of sites
    that write one stay byte for byte what they were), or the mapping with its defaults
    filled in: ``otherwise`` when there are names, and the counters resolved (the policy's,
    else the group's own over the site's defaults, as the group's hosts get them)."""
    if isinstance(discovery, str):
        return discovery
    out: dict[str, Any] = {"policy": discovery.policy}
    if discovery.names:
        out["names"] = list(discovery.names)
        out["otherwise"] = discovery.otherwise or "report"
    if discovery.group is not None:
        out["group"] = discovery.group
    counters = discovery.counters
    if counters is None and discovery.group is not None:
        group = next((g.item for g in groups if g.item.name == discovery.group), None)
        counters = {**default_counters, **group.counters} if group is not None else {}
    if counters:
        out["counters"] = dict(sorted(counters.items()))
    return out if len(out) > 1 else discovery.policy
