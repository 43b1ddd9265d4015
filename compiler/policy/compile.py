"""The policy compiler: policy files + the site's policy and proxies -> allowlists document.

``compile_policies`` is the entry point the site compiler calls; the review compiles the
same way from files read out of git. Problems are collected, never raised, so one run
reports everything; the document is built from what is valid. ``locate_policies`` decides
which policy folder a site compiles with (docs/policies.md "Where the policies come from").
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compiler import __version__
from compiler.core import bundled
from compiler.core import codes as site_codes
from compiler.core.canonical import digest, dumps
from compiler.core.git import work_tree_of
from compiler.core.problems import Problems, Where
from compiler.policy import codes
from compiler.policy.allowlists import build_document
from compiler.policy.catalog import read_catalog
from compiler.policy.enforce import enforce, waiver_index
from compiler.policy.guardrails import read_guardrails
from compiler.policy.model import Catalog, Guardrails, WaiverLimits
from compiler.policy.resolve import resolve_roles
from compiler.policy.roles import read_roles
from compiler.policy.site import read_site
from compiler.policy.waivers import valid_waivers
from compiler.source.yaml_source import SITE_POLICIES, SourceFile, display_path, load_file

OPCODES, ROLES, GUARDRAILS = "opcodes.yaml", "roles.yaml", "guardrails.yaml"
POLICY_FILES = (OPCODES, ROLES, GUARDRAILS)
THE_FILES = "opcodes.yaml, roles.yaml and guardrails.yaml"
# why a folder was taken, for PolicySource.found and the hints of its problems
GIVEN, IN_SITE, IN_REPOSITORY, BUNDLED = "--policies", "site", "repository", "bundled"
_FOUND = {
    GIVEN: "given with --policies",
    IN_SITE: f"the site folder's {SITE_POLICIES}/ folder",
    IN_REPOSITORY: f"{SITE_POLICIES}/ at the top of the site's git repository",
    BUNDLED: f"bundled with xce-gitops {__version__}",
}


@dataclass(frozen=True, slots=True)
class PolicySource:
    """The policy folder a compile uses, and why that one (``GIVEN``, ``IN_SITE``, ...)."""

    folder: Path
    found: str = GIVEN

    @property
    def bundled(self) -> bool:
        return self.found == BUNDLED

    def describe(self) -> str:
        """For people: "the policies bundled with xce-gitops 0.1.0", "policies/ (...)"."""
        if self.bundled:
            return f"the policies {_FOUND[BUNDLED]}"
        return f"{display_path(self.folder)} ({_FOUND[self.found]})"

    def hint(self, fix: str) -> str:
        """A problem's hint about the folder, saying why it was taken when nobody named it."""
        if self.found in (IN_SITE, IN_REPOSITORY):
            return (
                f"{fix}; this folder is used because it is {_FOUND[self.found]}: "
                "rename it to use the bundled policies"
            )
        if self.found == GIVEN:
            return f"{fix}, or leave out --policies to use the bundled ones"
        return fix


@dataclass(frozen=True, slots=True)
class PolicyBuild:
    """The compiled allowlists, the policy files read (so a ``Locator`` can place their
    problems), where they came from and the sha256 of each file's bytes."""

    document: dict[str, Any]
    sources: tuple[SourceFile, ...]
    origin: PolicySource
    file_digests: Mapping[str, str]

    def to_bytes(self) -> bytes:
        return dumps(self.document)

    @property
    def digest(self) -> str:
        """sha256 of the bytes of build/allowlists.json, for the manifest."""
        return digest(self.to_bytes())

    def provenance(self, site_dir: Path) -> dict[str, Any]:
        """The manifest's record of the policy data: bundled (with the version) or a folder
        (relative to the site folder), and each file's sha256, as ``sha256sum`` prints it."""
        files = dict(sorted(self.file_digests.items()))
        if self.origin.bundled:
            return {"source": BUNDLED, "version": __version__, "files": files}
        path = Path(os.path.relpath(self.origin.folder, site_dir)).as_posix()
        return {"source": "folder", "path": path, "files": files}


def choose_policies(
    site: Path, top: Path | None, given: Path | None, is_folder: Callable[[Path], bool]
) -> PolicySource:
    """The rule, once for the working tree and for a git revision: ``--policies DIR``, else
    ``policies/`` in the site folder, else ``policies/`` at the ``top`` of the site's
    repository, else the policies bundled with the package."""
    if given is not None:
        return PolicySource(given, GIVEN)
    candidates = [(site / SITE_POLICIES, IN_SITE)]
    if top is not None:
        candidates.append((top / SITE_POLICIES, IN_REPOSITORY))
    for folder, found in candidates:
        if is_folder(folder):
            return PolicySource(folder, found)
    return PolicySource(bundled.policies_dir(), BUNDLED)


def locate_policies(site_dir: Path, given: Path | None = None) -> PolicySource:
    """The policy folder a site folder compiles with (``choose_policies``)."""
    top = work_tree_of(site_dir) if given is None else None
    return choose_policies(site_dir, top, given, Path.is_dir)


def bundled_file(name: str) -> str:
    """Where a hint tells people to find a bundled policy file to start from."""
    return str((bundled.policies_dir() / name).resolve())


def missing_file(shown: str, origin: PolicySource, problems: Problems) -> None:
    """A policy file missing from its folder (XCE600): a folder replaces all three."""
    name = Path(shown).name
    fix = (
        f"a policies folder replaces the bundled policies as a whole: start from the bundled "
        f"{name}, {bundled_file(name)}"
    )
    problems.error(codes.FILE_MISSING, "policy file not found", origin.hint(fix), Where(shown))


def missing_folder(origin: PolicySource, problems: Problems) -> None:
    """The folder is not there (XCE010), or holds none of the policy files (XCE011)."""
    folder, shown = origin.folder, display_path(origin.folder)
    if folder.is_dir():
        code, message = site_codes.NO_POLICY_FILES, f"no policy files in '{shown}'"
        fix = f"put {THE_FILES} in it (start from the bundled ones, {bundled_file('.')})"
    else:
        code = site_codes.POLICIES_NOT_A_FOLDER
        message = f"policies folder '{shown}' " + (
            "is not a folder" if folder.exists() else "does not exist"
        )
        fix = f"give the folder that holds {THE_FILES}"
    problems.error(code, message, origin.hint(fix), subject=shown)


def load_policy_dir(origin: PolicySource, problems: Problems) -> dict[str, SourceFile]:
    """The folder's policy files, loaded; a missing folder or file is reported."""
    folder = origin.folder
    present = [name for name in POLICY_FILES if (folder / name).is_file()]
    if not present:
        missing_folder(origin, problems)
        return {}
    out: dict[str, SourceFile] = {}
    for name in POLICY_FILES:
        path = folder / name
        if name not in present:
            missing_file(display_path(path), origin, problems)
        elif (source := load_file(path, display_path(path), problems)) is not None:
            out[name] = source
    return out


def file_digests(blobs: Mapping[str, bytes]) -> dict[str, str]:
    """The sha256 of each policy file's bytes, by file name."""
    return {Path(name).name: digest(data) for name, data in sorted(blobs.items())}


def _catalog(files: Mapping[str, SourceFile], problems: Problems) -> Catalog:
    """The catalog; one without any opcode is an error (XCE012), since every allowlist
    compiled from it would be empty."""
    if OPCODES not in files:
        return Catalog({}, {})
    before = len(problems)
    catalog = read_catalog(files[OPCODES], problems)
    if not catalog.opcodes and len(problems) == before:
        problems.error(
            site_codes.EMPTY_CATALOG,
            "the opcode catalog lists no opcode",
            "list the controller's opcodes under 'opcodes:' (docs/policies.md)",
            Where(files[OPCODES].path, ("opcodes",)),
        )
    return catalog


def compile_sources(
    files: Mapping[str, SourceFile],
    site_files: Sequence[SourceFile],
    problems: Problems,
    today: datetime.date,
) -> dict[str, Any]:
    """Compile loaded policy files (keyed by file name) with the site's files."""
    catalog = _catalog(files, problems)
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
    policies: PolicySource | Path,
    site_files: Sequence[SourceFile],
    problems: Problems,
    today: datetime.date,
) -> PolicyBuild:
    """Entry point for the site compiler: read the policy folder (a plain path counts as
    given with --policies), apply the site's ``policy:`` and ``proxies:`` sections, enforce
    guardrails and return the allowlists."""
    origin = policies if isinstance(policies, PolicySource) else PolicySource(policies)
    files = load_policy_dir(origin, problems)
    document = compile_sources(files, site_files, problems, today)
    digests = file_digests({f.path: f.abspath.read_bytes() for f in files.values()})
    sources = tuple(files[n] for n in POLICY_FILES if n in files)
    return PolicyBuild(document, sources, origin, digests)
