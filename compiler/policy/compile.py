"""The policy compiler: policy files + the site's policy and proxies -> allowlists document.

``compile_policies`` is the entry point the site compiler calls; the review compiles the
same way from files read out of git. Problems are collected, never raised, so one run
reports everything; the document is built from what is valid.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compiler.canonical import digest, dumps
from compiler.policy.allowlists import build_document
from compiler.policy.catalog import read_catalog
from compiler.policy.enforce import enforce, waiver_index
from compiler.policy.guardrails import read_guardrails
from compiler.policy.model import Catalog, Guardrails, WaiverLimits
from compiler.policy.resolve import resolve_roles
from compiler.policy.roles import read_roles
from compiler.policy.site import read_site
from compiler.policy.waivers import valid_waivers
from compiler.problems import Problems, Where
from compiler.yaml_source import SourceFile, display_path, load_file

OPCODES, ROLES, GUARDRAILS = "opcodes.yaml", "roles.yaml", "guardrails.yaml"
POLICY_FILES = (OPCODES, ROLES, GUARDRAILS)


@dataclass(frozen=True, slots=True)
class PolicyBuild:
    """The compiled allowlists, and the policy files read (so a ``Locator`` can place their
    problems)."""

    document: dict[str, Any]
    sources: tuple[SourceFile, ...]

    def to_bytes(self) -> bytes:
        return dumps(self.document)

    @property
    def digest(self) -> str:
        """sha256 of the bytes of build/allowlists.json, for the manifest."""
        return digest(self.to_bytes())


def missing_file(shown: str, problems: Problems) -> None:
    problems.error(
        "XCE600",
        "policy file not found",
        "the policies folder holds opcodes.yaml, roles.yaml and guardrails.yaml",
        Where(shown),
    )


def load_policy_dir(policies_dir: Path, problems: Problems) -> dict[str, SourceFile]:
    out: dict[str, SourceFile] = {}
    for name in POLICY_FILES:
        path = policies_dir / name
        shown = display_path(path)
        if not path.is_file():
            missing_file(shown, problems)
            continue
        source = load_file(path, shown, problems)
        if source is not None:
            out[name] = source
    return out


def compile_sources(
    files: Mapping[str, SourceFile],
    site_files: Sequence[SourceFile],
    problems: Problems,
    today: datetime.date,
) -> dict[str, Any]:
    """Compile loaded policy files (keyed by file name) with the site's files."""
    catalog = read_catalog(files[OPCODES], problems) if OPCODES in files else Catalog({}, {})
    site = read_site(site_files, problems)
    before = len(problems)
    base_roles = read_roles(files[ROLES], problems) if ROLES in files else []
    roles_broken = not base_roles and len(problems) > before
    guardrails = (
        read_guardrails(files[GUARDRAILS], problems)
        if GUARDRAILS in files
        else Guardrails((), WaiverLimits())
    )
    if not catalog.opcodes or ROLES not in files or roles_broken:
        # nothing to resolve against: checking names now would only echo the broken file
        return build_document(catalog, {}, {}, (), problems)
    roles = resolve_roles(catalog, base_roles, site, problems)
    rails = {g.name: g for g in guardrails.rules}
    waivers = valid_waivers(site.waivers, rails, guardrails.limits, today, problems)
    index = waiver_index(waivers, roles, catalog, problems)
    waived = enforce(guardrails.rules, roles, catalog, index, problems)
    return build_document(catalog, roles, waived, site.proxies, problems)


def compile_policies(
    policies_dir: Path,
    site_files: Sequence[SourceFile],
    problems: Problems,
    today: datetime.date,
) -> PolicyBuild:
    """Entry point for the site compiler: read policies/, apply the site's ``policy:``
    and ``proxies:`` sections, enforce guardrails and return the allowlists."""
    files = load_policy_dir(policies_dir, problems)
    document = compile_sources(files, site_files, problems, today)
    return PolicyBuild(document, tuple(files[n] for n in POLICY_FILES if n in files))
