"""A site-config folder as validated, located items, gathered across files.

Every file carries ``version: 1`` and any of the sections; list sections may be split
across files. Items are validated one at a time so that one bad item does not hide the
others, and the names of invalid items are still known (no false "unknown reference").
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from compiler.contract.bindings import IMPLICIT_CONTROLLER
from compiler.contract.drift import DriftWaiver, IgnoreRule, Match, Notify
from compiler.contract.provider_params import BUILTIN_PARAMS, DatasetCopyParams
from compiler.core import codes
from compiler.core.names import did_you_mean, visible
from compiler.core.problems import Problem, Problems, Where, YPath
from compiler.core.types import BareSeconds
from compiler.model.datasets import DIGEST_HINT, Cache, Dataset, digest_hint
from compiler.model.drift import DriftSection
from compiler.model.errors import problems_from
from compiler.model.hosts import HostGroup
from compiler.model.pools import CustomCounter, LicensePool, StoragePool
from compiler.model.providers import Provider, Proxy
from compiler.model.quotas import Quota
from compiler.model.site import ProxiesSetting, Site
from compiler.model.volumes import Volume
from compiler.source.yaml_source import SourceFile

LANGUAGE_VERSION = 1

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Located(Generic[T]):
    """A validated item and where it was written."""

    item: T
    where: Where


@dataclass(slots=True)
class DriftParts:
    """Every file's drift section, item by item with its place (``SiteDocument.drift``)."""

    ignore: list[Located[IgnoreRule]] = field(default_factory=list)
    waivers: list[Located[DriftWaiver]] = field(default_factory=list)
    notify: list[Located[Notify]] = field(default_factory=list)


# List sections: YAML path inside a file -> model of one item.
LIST_SECTIONS: dict[tuple[str, ...], type[BaseModel]] = {
    ("host_groups",): HostGroup,
    ("pools", "licenses"): LicensePool,
    ("pools", "storage"): StoragePool,
    ("pools", "counters"): CustomCounter,
    ("datasets",): Dataset,
    ("caches",): Cache,
    ("volumes",): Volume,
    ("quotas",): Quota,
    ("providers",): Provider,
    ("proxies",): Proxy,
}
TOP_KEYS = (
    "version",
    "site",
    "host_groups",
    "pools",
    "datasets",
    "caches",
    "volumes",
    "quotas",
    "providers",
    "proxies",
    "policy",
    "drift",
)
POOL_KEYS = ("licenses", "storage", "counters")
# The key that names an item of a list section, where it is not ``name``.
NAME_KEYS: dict[tuple[str, ...], str] = {("caches",): "location"}


@dataclass(slots=True)
class SiteDocument:
    """All sections of a site, each item with its place; ``invalid_names`` per section."""

    site: Located[Site] | None = None
    site_seen: bool = False  # a 'site:' section was written, even if it failed validation
    items: dict[tuple[str, ...], list[Located[Any]]] = field(default_factory=dict)
    invalid_names: dict[tuple[str, ...], set[str]] = field(default_factory=dict)
    # Raw items that failed validation, so checks can still read what they name (a proxy's
    # ``active:`` list) instead of reporting a false "served by no proxy".
    invalid_items: dict[tuple[str, ...], list[Any]] = field(default_factory=dict)
    # A built-in provider's params as validated by its kind's model, by provider name.
    params: dict[str, BaseModel] = field(default_factory=dict)
    # The ``drift:`` sections' rules, waivers and notify, each with its place.
    drift: DriftParts = field(default_factory=DriftParts)
    # A dataset's missing or malformed digest, with the raw dataset: reported once the
    # providers are known, so that the hint names the path for xce-digest.
    digest_problems: list[tuple[Problem, Any]] = field(default_factory=list)

    def section(self, path: tuple[str, ...]) -> list[Located[Any]]:
        return self.items.get(path, [])

    @property
    def host_groups(self) -> list[Located[HostGroup]]:
        return self.section(("host_groups",))

    @property
    def licenses(self) -> list[Located[LicensePool]]:
        return self.section(("pools", "licenses"))

    @property
    def storage_pools(self) -> list[Located[StoragePool]]:
        return self.section(("pools", "storage"))

    @property
    def counters(self) -> list[Located[CustomCounter]]:
        return self.section(("pools", "counters"))

    @property
    def datasets(self) -> list[Located[Dataset]]:
        return self.section(("datasets",))

    @property
    def caches(self) -> list[Located[Cache]]:
        return self.section(("caches",))

    @property
    def volumes(self) -> list[Located[Volume]]:
        return self.section(("volumes",))

    @property
    def quotas(self) -> list[Located[Quota]]:
        return self.section(("quotas",))

    @property
    def providers(self) -> list[Located[Provider]]:
        return self.section(("providers",))

    @property
    def proxies(self) -> list[Located[Proxy]]:
        return self.section(("proxies",))

    @property
    def controller(self) -> str:
        """The site's controller-map provider; an embedded one named 'controller' if none
        is declared."""
        for p in self.providers:
            if p.item.kind == "controller-map":
                return p.item.name
        return IMPLICIT_CONTROLLER


def _check_version(src: SourceFile, problems: Problems) -> bool:
    data = src.data
    where = Where(src.path, ("version",))
    if "version" not in data:
        problems.error(
            codes.NO_VERSION,
            "missing 'version:' key",
            f"add 'version: {LANGUAGE_VERSION}' at the top of the file",
            Where(src.path, line=1, column=1),
        )
        return False
    v = data["version"]
    if isinstance(v, bool) or not isinstance(v, int):
        problems.error(
            codes.NO_VERSION,
            f"'version' must be a whole number, got {v!r}",
            f"write 'version: {LANGUAGE_VERSION}'",
            where,
        )
        return False
    if v > LANGUAGE_VERSION:
        problems.error(
            codes.UNKNOWN_VERSION,
            f"file is written for language version {v}; this compiler reads version "
            f"{LANGUAGE_VERSION}",
            "upgrade xce-gitops, or write the file for version 1",
            where,
        )
        return False
    if v < 1:
        problems.error(
            codes.UNKNOWN_VERSION, f"unknown language version {v}",
            f"write 'version: {LANGUAGE_VERSION}'", where,
        )
        return False
    return True


def _unknown_keys(
    data: dict[Any, Any], allowed: Sequence[str], base: Where, problems: Problems
) -> list[Any]:
    """Report each key not in ``allowed``; returns them."""
    unknown = [key for key in data if key not in allowed]
    for key in unknown:
        hint = did_you_mean(str(key), allowed) or f"allowed keys here: {', '.join(allowed)}"
        problems.error(
            codes.UNKNOWN_KEY, f"unknown key '{visible(str(key))}'", hint,
            base.child(str(key)).at_key(),
        )
    return unknown


def _section(data: dict[Any, Any], pools: Any, path: tuple[str, ...]) -> Any:
    """The raw value of a list section: ``data[path[0]]``, or a list under ``pools:``."""
    if len(path) == 1:
        return data.get(path[0])
    return pools.get(path[1]) if isinstance(pools, dict) else None


def _excuse(doc: SiteDocument, path: tuple[str, ...], raw: Any) -> None:
    """Items of a section that were not validated still count as defined: their names (so
    references to them report nothing), and the raw items (for checks that read what they
    name, such as a proxy's ``active:`` list)."""
    if not isinstance(raw, list):
        return
    for item in raw:
        doc.invalid_items.setdefault(path, []).append(item)
        name = item.get(NAME_KEYS.get(path, "name")) if isinstance(item, dict) else None
        if isinstance(name, str):
            doc.invalid_names.setdefault(path, set()).add(name)


def _not_read(doc: SiteDocument, data: dict[Any, Any]) -> None:
    """Sections a file would have defined but that were not read, because its top level
    failed (docs/errors.md, "Reported alone"): their items count as defined, like items
    that failed validation, so the file's one error causes no "unknown" errors elsewhere."""
    if isinstance(data.get("site"), dict):
        doc.site_seen = True
    for path in LIST_SECTIONS:
        _excuse(doc, path, _section(data, data.get("pools"), path))


_UNIT_WORDS = {"m": "minutes", "h": "hours", "d": "days"}


def _warn_bare_durations(item: BaseModel, where: Where, problems: Problems) -> None:
    """XCE430 at each duration of minutes or more written as a bare number (BareSeconds):
    ``join_deadline: 30`` is 30 seconds, which is rarely what was meant."""
    stack: list[tuple[Any, YPath]] = [(item, where.ypath)]
    while stack:
        value, path = stack.pop()
        if isinstance(value, BareSeconds):
            n, unit = int(value), value.meant
            problems.warning(
                codes.BARE_DURATION,
                f"{n} was taken as {n} s; write {n}s, or {n}{unit} if you meant "
                f"{_UNIT_WORDS[unit]}",
                "a duration without a unit is seconds: write the unit to say which you meant",
                Where(where.file, path),
            )
        elif isinstance(value, BaseModel):
            fields = type(value).model_fields
            stack.extend((getattr(value, k), (*path, f.alias or k)) for k, f in fields.items())
        elif isinstance(value, dict):
            stack.extend((v, (*path, str(k))) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(value))


def _validated(model: type[T], raw: Any, where: Where, problems: Problems) -> T:
    """``raw`` as ``model`` (ValidationError if it is not), with its warnings reported."""
    item = model.model_validate(raw)
    _warn_bare_durations(item, where, problems)
    return item


def _list_hint(path: tuple[str, ...], raw: Any) -> str:
    """What to write instead of a list section that is not a list: the proxies' setting
    (``serve:``…) belongs under ``site:``, where the top level lists the proxies."""
    if path == ("proxies",) and isinstance(raw, dict) and raw.keys() & ProxiesSetting.model_fields:
        return ("where providers run is a setting of the site: indent 'proxies:' under "
                "'site:'; the top-level 'proxies:' lists the proxies, each starting with '- '")
    return "write each item on a line starting with '- '"


def _validate_list(
    doc: SiteDocument, src: SourceFile, path: tuple[str, ...], raw: Any, problems: Problems
) -> None:
    model = LIST_SECTIONS[path]
    where = Where(src.path, path)
    if raw is None:
        return
    if not isinstance(raw, list):
        problems.error(
            codes.WRONG_TYPE,
            f"'{'.'.join(path)}' must be a list, got {type(raw).__name__}",
            _list_hint(path, raw),
            where,
        )
        return
    bucket = doc.items.setdefault(path, [])
    doc.invalid_names.setdefault(path, set())
    for i, item in enumerate(raw):
        at = where.child(i)
        try:
            bucket.append(Located(_validated(model, item, at, problems), at))
        except ValidationError as exc:
            for problem in problems_from(exc, model, at):
                if problem.hint == DIGEST_HINT:
                    doc.digest_problems.append((problem, item))
                else:
                    problems.add(problem)
            _excuse(doc, path, [item])


def _validate_file(doc: SiteDocument, src: SourceFile, problems: Problems) -> None:
    data = src.data
    if data is None:
        problems.error(
            codes.NOT_A_DOCUMENT,
            "file is empty",
            f"start it with 'version: {LANGUAGE_VERSION}'",
            Where(src.path, line=1, column=1),
        )
        return
    if not isinstance(data, dict):
        problems.error(
            codes.NOT_A_DOCUMENT,
            f"the top of the file must be a mapping, got {type(data).__name__}",
            "write 'version: 1' and sections such as 'host_groups:'",
            Where(src.path, line=1, column=1),
        )
        return
    if not _check_version(src, problems):
        _not_read(doc, data)
        return
    for key in _unknown_keys(data, TOP_KEYS, Where(src.path), problems):
        _not_read(doc, dict.fromkeys(TOP_KEYS, data[key]))  # a typo of any section
    if "site" in data:
        doc.site_seen = True
        where = Where(src.path, ("site",))
        if doc.site is not None:
            problems.error(
                codes.DEFINED_TWICE,
                "'site:' is defined twice",
                "keep one 'site:' section",
                where.at_key(),
                also=[doc.site.where.at_key()],
            )
        else:
            try:
                doc.site = Located(_validated(Site, data["site"], where, problems), where)
            except ValidationError as exc:
                problems.extend(problems_from(exc, Site, where))
    if "drift" in data:
        _read_drift(doc.drift, data["drift"], Where(src.path, ("drift",)), problems)
    pools = data.get("pools")
    if pools is not None:
        if isinstance(pools, dict):
            for key in _unknown_keys(pools, POOL_KEYS, Where(src.path, ("pools",)), problems):
                _not_read(doc, {"pools": dict.fromkeys(POOL_KEYS, pools[key])})
        else:
            problems.error(
                codes.WRONG_TYPE,
                "'pools' must be a mapping of licenses, storage, counters",
                "write 'licenses:', 'storage:' or 'counters:' lists indented under 'pools:'",
                Where(src.path, ("pools",)),
            )
            pools = {}
    for path in LIST_SECTIONS:
        _validate_list(doc, src, path, _section(data, pools, path), problems)


_DRIFT_LISTS: dict[str, type[Match]] = {"ignore": IgnoreRule, "waivers": DriftWaiver}


def _failed_drift_part(loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """What an error at ``loc`` makes unusable: a list's item, else the key it is under."""
    if len(loc) >= 2 and loc[0] in _DRIFT_LISTS and isinstance(loc[1], int):
        return loc[:2]
    return loc[:1]


def _read_drift(parts: DriftParts, raw: Any, where: Where, problems: Problems) -> None:
    """One file's ``drift:`` section: every error reported, and each rule that is right
    kept with its place, so the compile still checks it across files (one bad rule hides
    no unknown provider in another)."""
    failed: set[tuple[str | int, ...]] = set()
    try:
        DriftSection.model_validate(raw)
    except ValidationError as exc:
        problems.extend(problems_from(exc, DriftSection, where))
        failed = {_failed_drift_part(tuple(e["loc"])) for e in exc.errors()}
    if not isinstance(raw, dict) or () in failed:
        return
    for key, model in _DRIFT_LISTS.items():
        items = raw.get(key)
        if isinstance(items, list) and (key,) not in failed:
            getattr(parts, key).extend(
                Located(model.model_validate(item), where.child(key, i))
                for i, item in enumerate(items) if (key, i) not in failed)
    if raw.get("notify") is not None and ("notify",) not in failed:
        parts.notify.append(Located(Notify.model_validate(raw["notify"]), where.child("notify")))


def _validate_params(doc: SiteDocument, problems: Problems) -> None:
    """Each built-in provider's params against its kind's model: a misspelt key is an error
    at its line (with the nearest key), never a default silently used instead. A provider
    with bad params stays defined, so what refers to it reports nothing more."""
    for p in doc.providers:
        model = BUILTIN_PARAMS.get(p.item.kind)
        if model is None:
            continue
        try:
            doc.params[p.item.name] = model.model_validate(p.item.params)
        except ValidationError as exc:
            for problem in problems_from(exc, model, p.where.child("params")):
                if problem.code == codes.MISSING_KEY:
                    problem = replace(problem, hint="add it under the provider's 'params:'")
                problems.add(problem)


def _dataset_path(raw: Any, doc: SiteDocument) -> str | None:
    """Where a dataset's files are, as xce-digest takes them: its source, under the
    ``source_base`` of a copy's dataset-copy provider if relative; None if not known."""
    source = raw.get("source") if isinstance(raw, dict) else None
    if not isinstance(source, str) or not source:
        return None
    if source.startswith("/"):
        return source
    copies = raw.get("copies")
    for copy in copies if isinstance(copies, list) else []:
        provider = copy.get("provider") if isinstance(copy, dict) else None
        params = doc.params.get(provider) if isinstance(provider, str) else None
        if isinstance(params, DatasetCopyParams) and params.source_base:
            return posixpath.join(params.source_base, source)
    return None


def build_document(files: Iterable[SourceFile], problems: Problems) -> SiteDocument:
    doc = SiteDocument()
    for src in files:
        _validate_file(doc, src, problems)
    _validate_params(doc, problems)
    for problem, raw in doc.digest_problems:
        problems.add(replace(problem, hint=digest_hint(_dataset_path(raw, doc))))
    return doc
