"""One site-config file as a whole: its top-level keys, for the editor schema.

The compiler reads a file section by section (``document.py``, item by item, so that one
bad item hides no other); this model only describes the same keys, with their meaning, for
``xce-compile --schema``. Its fields are ``document.TOP_KEYS``, in that order (tested).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from compiler.core import forms
from compiler.core.forms import JsonForm
from compiler.core.names import POLICY_NAME_RE
from compiler.core.types import Strict
from compiler.model.datasets import Cache, Dataset
from compiler.model.document import LANGUAGE_VERSION
from compiler.model.drift import DriftSection
from compiler.model.hosts import HostGroup
from compiler.model.pools import Pools
from compiler.model.providers import Provider, Proxy
from compiler.model.quotas import Quota
from compiler.model.site import Site
from compiler.model.volumes import Volume

# The ``policy:`` section as compiler/policy reads it (a hand reader, the truth; these
# models only describe it, and tests/compiler/test_schema_agreement.py holds them to it).
Text = Annotated[str, JsonForm(forms.non_blank_form)]
PolicyName = Annotated[str, JsonForm(lambda: forms.policy_name_form(POLICY_NAME_RE.pattern))]
Selectors = Annotated[list[Text], Field(min_length=1)]
ExpiryDate = Annotated[str, JsonForm(forms.policy_date_form)]
_SELECTORS = "opcode selectors: names, globs (supply.*), category:X or risk:X"


class SiteRole(Strict):
    name: PolicyName = Field(
        description="the new role's name; not one of policies/roles.yaml", examples=["site-monitor"]
    )
    description: Text | SkipJsonSchema[None] = Field(
        default=None,
        description="what the role is for, for people",
        examples=["The site's monitoring"],
    )
    allow: Selectors = Field(
        description="what the role may call: " + _SELECTORS,
        examples=[["category:host", "supply.report"]],
    )
    deny: Selectors | SkipJsonSchema[None] = Field(
        default=None,
        description="what it may not, even if allowed: " + _SELECTORS,
        examples=[["host.join"]],
    )


class RoleRule(Strict):
    role: Text = Field(description="the role this rule changes", examples=["proxy"])
    opcodes: Selectors = Field(
        description="the opcodes it allows or denies: " + _SELECTORS,
        examples=[["config.reload"]],
    )


class Waiver(Strict):
    name: PolicyName = Field(description="the waiver's name", examples=["proxy-admin-reload"])
    guardrail: Text = Field(
        description="the guardrail it loosens", examples=["admin-only-admin-cli"]
    )
    role: Text = Field(description="the role that may hold the opcodes", examples=["proxy"])
    opcodes: Selectors = Field(
        description="the opcodes the role may hold despite the guardrail: " + _SELECTORS,
        examples=[["config.reload"]],
    )
    reason: Text = Field(
        description="why: shown in the compiled allowlists",
        examples=["proxies reload their provider configuration after a credential rotation"],
    )
    expires: ExpiryDate = Field(
        description="the last day it holds; a review renews it", examples=["2027-06-30"]
    )


class PolicySection(Strict):
    roles: list[SiteRole] | SkipJsonSchema[None] = Field(
        default=None,
        description="new roles; guardrails apply to them",
        examples=[[{"name": "site-monitor", "allow": ["category:host"]}]],
    )
    allow: list[RoleRule] | SkipJsonSchema[None] = Field(
        default=None,
        description="extra opcodes for an existing role; guardrails and its denies still apply",
        examples=[[{"role": "proxy", "opcodes": ["config.reload"]}]],
    )
    deny: list[RoleRule] | SkipJsonSchema[None] = Field(
        default=None,
        description="extra denies for any role",
        examples=[[{"role": "reporter", "opcodes": ["supply.update"]}]],
    )
    waivers: list[Waiver] | SkipJsonSchema[None] = Field(
        default=None,
        description="the only way to loosen a guardrail: for one role, until a date",
        examples=[
            [
                {
                    "name": "proxy-admin-reload",
                    "guardrail": "admin-only-admin-cli",
                    "role": "proxy",
                    "opcodes": ["config.reload"],
                    "reason": "rotation",
                    "expires": "2027-06-30",
                }
            ]
        ],
    )


class SiteFile(Strict):
    """A site-config file: ``version: 1`` and any sections; list sections may be split
    across files, and an empty one (``host_groups:``) is no items."""

    version: int = Field(
        ge=1,
        le=LANGUAGE_VERSION,
        description="the language version the file is written for; required in every file",
        examples=[LANGUAGE_VERSION],
    )
    # Optional in a file, but never empty (the compiler refuses ``site:`` with no value).
    site: Site | SkipJsonSchema[None] = Field(
        default=None,
        description="the site's identity and planning policy; in exactly one file",
        examples=[{"name": "hpc-east", "join_deadline": "30m"}],
    )
    host_groups: list[HostGroup] | None = Field(
        default=None,
        description="groups of hosts, listed or provisioned on demand",
        examples=[[{"name": "gpu", "hosts": "gn[001-032]"}]],
    )
    pools: Pools | None = Field(
        default=None,
        description="shared supply that is not on a host: licenses, storage, counters",
        examples=[{"licenses": [{"name": "matlab", "amount": 64}]}],
    )
    datasets: list[Dataset] | None = Field(
        default=None,
        description="immutable datasets (name@version) and where their copies are",
        examples=[
            [
                {
                    "name": "imagenet",
                    "version": 3,
                    "size": "150GiB",
                    "digest": "sha256:" + "0" * 63 + "1",
                    "source": "imagenet@3",
                }
            ]
        ],
    )
    caches: list[Cache] | None = Field(
        default=None,
        description="the dataset cache of a location",
        examples=[[{"location": "group/gpu", "capacity": "40TiB", "provider": "gpu-cache"}]],
    )
    volumes: list[Volume] | None = Field(
        default=None,
        description="shared volumes with per-user directories",
        examples=[
            [
                {
                    "name": "shared",
                    "provider": "shared-fs",
                    "path": "/shared/xce",
                    "capacity": "500TiB",
                    "mounted_by": ["cpu-a"],
                }
            ]
        ],
    )
    quotas: list[Quota] | None = Field(
        default=None,
        description="quotas per user or project, on a volume or a pool",
        examples=[[{"volume": "shared", "users": {"alice": "2TiB"}}]],
    )
    providers: list[Provider] | None = Field(
        default=None,
        description="what holds the supply and can report and change it",
        examples=[[{"name": "shared-fs", "kind": "directory"}]],
    )
    proxies: list[Proxy] | None = Field(
        default=None,
        description="the processes that run providers, one active proxy per provider",
        examples=[[{"name": "proxy-a", "host": "adm01", "active": ["shared-fs"]}]],
    )
    policy: PolicySection | SkipJsonSchema[None] = Field(
        default=None,
        description="the site's extensions of the opcode policies (docs/policies.md)",
        examples=[{"allow": [{"role": "proxy", "opcodes": ["config.reload"]}]}],
    )
    drift: DriftSection | SkipJsonSchema[None] = Field(
        default=None,
        description="ignore rules, waivers and email of drift reports (docs/drift.md)",
        examples=[{"ignore": [{"entries": "volume-dir/scratch/*", "reason": "purged nightly"}]}],
    )
