"""``site.discovery``: what becomes of a host that joins although no entry expects it (PR-4).

Either a policy word (``report``, ``admit``, ``reject``), as sites have always written it,
or a mapping that limits the policy to name patterns and says what an admitted host gets:

    discovery:
      policy: admit
      names: ["burst*", "cn[0001-0100]"]   # hostlists or globs (compiler/core/name_patterns.py)
      otherwise: report                     # the hosts the names do not match (default report)
      group: burst                          # an admitted host's group, and its features
      counters: {slots: 32}                 # default: the group's counters

The mapping's checks against the rest of the site are in compiler/checks/discovery.py; what
the compiled map holds of it, in compiler/emit/settings.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Discriminator, Field, GetJsonSchemaHandler, Tag
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from compiler.contract.vocabulary import DiscoveryPolicy, OtherwisePolicy
from compiler.core.types import Counters, Name, Strict

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
    otherwise: OtherwisePolicy | None = Field(
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


class AnyOf:
    """The editor schema says ``anyOf`` where pydantic says ``oneOf``: the keywords editors
    understand (tests/compiler/test_schema_file.py) lack it, and the forms of a tagged union
    (a word, a mapping, a list) never both fit, so the two mean the same here."""

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
    AnyOf(),
]
