"""Provider bindings (``build/bindings.json``): which proxy runs which provider (PR-2, N2).

The one definition of the format: the compiler builds a ``Bindings``
(``compiler.emit.bindings``) and writes it (``Bindings.to_json``); the reconciler reads it
(``Bindings.from_json``) through the same ``ProviderBinding``. A built-in kind's ``params``
are read into its model (``compiler.contract.provider_params``), with its site-relative
paths resolved against the site folder; an external kind's (``exec``, ``jsonl``) stay
free-form JSON, for its program to read.

A binding is read when its provider is opened, not when the file is: a plan from a live
snapshot never imports the params models (docs/performance.md), and one bad binding makes
only its own provider unusable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from compiler.core.secrets import REFERENCE_FORMS, Redactor, is_reference

if TYPE_CHECKING:
    from pydantic import BaseModel

IMPLICIT_CONTROLLER = "controller"
DEFAULT_TIMEOUT = 30.0  # seconds one call may take, for a binding without ``timeout``
DEFAULT_MAX_REPLY_BYTES = 256 * 2**20  # for a binding without ``max_reply_bytes``
# site.proxies (docs/language.md, "Where providers run"), in seconds: the one place defined.
DEFAULT_INVENTORY_MAX_AGE = 600  # a published inventory older than this is unknown
DEFAULT_PUBLISH_INTERVAL = 60  # how often the active proxy re-reads each inventory
DEFAULT_LEASE_TTL = 15  # a provider lease lapses this long after its last renewal

# Where a provider runs; absent from bindings.json is in-process.
Via = Literal["in-process", "proxy"]

class BindingError(ValueError):
    """A binding that cannot be used; the message says what is wrong, after the provider's
    name (``provider 'x' <message>``), and never shows a secret's value."""


@dataclass(frozen=True, slots=True)
class ProviderBinding:
    """One provider's binding. ``params`` is the kind's model for a built-in kind, the
    params as written for an external one."""

    kind: str
    params: BaseModel | Mapping[str, Any]
    command: tuple[str, ...] | None = None
    secrets: Mapping[str, str] = field(default_factory=dict)
    account: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES
    proxy: str | None = None
    standbys: tuple[str, ...] = ()
    via: Via = "in-process"

    def to_json(self) -> dict[str, Any]:
        """A built-in's params with only the keys written (sizes and durations in numbers);
        ``via`` only when proxied, so a site without proxies writes what it always wrote."""
        params = self.params
        via = {"via": self.via} if self.via == "proxy" else {}
        return {
            "kind": self.kind,
            "command": None if self.command is None else list(self.command),
            "params": dict(params) if isinstance(params, Mapping)
            else params.model_dump(mode="json", exclude_unset=True),
            "secrets": dict(self.secrets),
            "account": self.account,
            "timeout": self.timeout,
            "max_reply_bytes": self.max_reply_bytes,
            "proxy": self.proxy,
            "standbys": list(self.standbys),
            **via,
        }

    @classmethod
    def from_json(cls, doc: object, site: Path | None = None) -> ProviderBinding:
        """A binding as bindings.json holds it; ``site``: the folder that site-relative
        params are under (None: leave them as written). Raises BindingError."""
        if not isinstance(doc, Mapping):
            raise BindingError("has a binding that is not an object")
        kind = _known_kind(doc.get("kind"))
        external = kind in _kinds()[1]
        return cls(
            kind=kind,
            params=_params(kind, external, doc.get("params"), site),
            command=_command(doc.get("command")) if external else None,
            secrets=_secrets(doc.get("secrets")),
            account=_text(doc.get("account")),
            timeout=_positive(doc, "timeout", DEFAULT_TIMEOUT, "seconds"),
            max_reply_bytes=int(_positive(doc, "max_reply_bytes", DEFAULT_MAX_REPLY_BYTES,
                                          "bytes", whole=True)),
            proxy=_text(doc.get("proxy")),
            standbys=tuple(s for s in doc.get("standbys") or () if isinstance(s, str)),
            via=_via(doc),
        )


@dataclass(frozen=True, slots=True)
class ProxyBinding:
    """A proxy: the host it runs on and the providers it serves, active or on standby."""

    host: str
    active: tuple[str, ...] = ()
    standby: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"host": self.host, "active": list(self.active), "standby": list(self.standby)}

    @classmethod
    def from_json(cls, name: str, doc: object) -> ProxyBinding:
        """A proxy as bindings.json holds it; raises BindingError."""
        if not isinstance(doc, Mapping) or not isinstance(doc.get("host"), str):
            raise BindingError(f"bindings have proxy {name!r} without a 'host'")
        served = {key: doc.get(key) or [] for key in ("active", "standby")}
        if not all(isinstance(v, list) and all(isinstance(n, str) for n in v)
                   for v in served.values()):
            raise BindingError(f"bindings have proxy {name!r} whose 'active' or 'standby' "
                               "is not a list of provider names")
        return cls(doc["host"], tuple(served["active"]), tuple(served["standby"]))


@dataclass(frozen=True, slots=True)
class ProxySettings:
    """``site.proxies`` as bindings.json holds it (seconds): how old a published inventory
    may be before it is unknown, how often the active proxy publishes, how long a provider
    lease lasts unrenewed."""

    inventory_max_age: float = DEFAULT_INVENTORY_MAX_AGE
    publish_interval: float = DEFAULT_PUBLISH_INTERVAL
    lease_ttl: float = DEFAULT_LEASE_TTL

    def to_json(self) -> dict[str, float]:
        return {"inventory_max_age": self.inventory_max_age,
                "publish_interval": self.publish_interval, "lease_ttl": self.lease_ttl}

    @classmethod
    def from_json(cls, doc: object) -> ProxySettings:
        """The settings as bindings.json holds them (absent: the defaults); raises
        BindingError."""
        if doc is None:
            return cls()
        if not isinstance(doc, Mapping):
            raise BindingError("bindings have a 'proxy_settings' that is not an object")
        defaults = cls()
        known = [f.name for f in fields(cls)]
        unknown = sorted(map(str, set(doc) - set(known)))
        if unknown:
            raise BindingError(f"bindings have unknown 'proxy_settings' keys: {', '.join(unknown)}")
        try:
            return cls(**{key: _positive(doc, key, getattr(defaults, key), "seconds")
                          for key in known})
        except BindingError as err:
            raise BindingError(f"bindings' proxy_settings {err}") from None


@dataclass(frozen=True, slots=True)
class Bindings:
    """``bindings.json``: each provider's binding by name, read with ``binding`` when that
    provider is opened, and the proxies that serve them."""

    written: Mapping[str, Any]  # provider name -> its binding as bindings.json holds it
    site: Path | None = None  # what site-relative params are under
    proxies: Mapping[str, ProxyBinding] = field(default_factory=dict)
    proxy_settings: ProxySettings = field(default_factory=ProxySettings)

    @classmethod
    def of(cls, providers: Mapping[str, ProviderBinding], proxies: Mapping[str, ProxyBinding],
           proxy_settings: ProxySettings | None = None) -> Bindings:
        """The bindings the compiler built, each provider's as bindings.json holds it."""
        return cls({name: b.to_json() for name, b in providers.items()}, proxies=proxies,
                   proxy_settings=proxy_settings or ProxySettings())

    @classmethod
    def from_json(cls, doc: object, site: Path | None = None) -> Bindings:
        if not isinstance(doc, Mapping) or not isinstance(providers := doc.get("providers"),
                                                          Mapping):
            raise BindingError("bindings have no 'providers' object")
        proxies = doc.get("proxies") or {}
        if not isinstance(proxies, Mapping):
            raise BindingError("bindings have a 'proxies' that is not an object")
        for name, written in providers.items():
            _proxied(name, written)
        return cls(dict(providers), site,
                   {name: ProxyBinding.from_json(name, p) for name, p in proxies.items()},
                   ProxySettings.from_json(doc.get("proxy_settings")))

    def to_json(self) -> dict[str, Any]:
        """bindings.json, as the compiler writes it: ``proxy_settings`` only when some
        provider runs in a proxy, so a site without proxies writes what it always wrote."""
        settings = {"proxy_settings": self.proxy_settings.to_json()} if self.proxied() else {}
        return {"providers": dict(self.written),
                "proxies": {name: p.to_json() for name, p in self.proxies.items()},
                **settings}

    def proxied(self) -> list[str]:
        """The providers that run only inside their proxy (``via: proxy``), sorted."""
        return sorted(name for name, written in self.written.items()
                      if isinstance(written, Mapping) and written.get("via") == "proxy")

    def at(self, site: Path) -> Bindings:
        """The same bindings, their site-relative params under ``site``."""
        return replace(self, site=site)

    @property
    def names(self) -> tuple[str, ...]:
        """Every bound provider, sorted."""
        return tuple(sorted(self.written))

    def __contains__(self, name: object) -> bool:
        return name in self.written

    def binding(self, name: str) -> ProviderBinding:
        """The binding of bound provider ``name``; raises BindingError when it is unusable."""
        return ProviderBinding.from_json(self.written[name], self.site)

    def redactor(self) -> Redactor:
        """What an output made from these providers' answers may show: their secrets'
        resolved values are scrubbed. An unusable binding is skipped: the gather reports it,
        and its secrets cannot be read either."""
        references: list[str] = []
        for name in self.names:
            try:
                references += self.binding(name).secrets.values()
            except BindingError:
                continue
        return Redactor.of(references)


def _kinds() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The one list of kinds (built-in, external); imported when a binding is first read,
    as it imports the params models (pydantic)."""
    from compiler.contract import provider_params

    return provider_params.BUILTIN_KINDS, provider_params.EXTERNAL_KINDS


def _known_kind(kind: object) -> str:
    known = (*_kinds()[0], *_kinds()[1])
    if not isinstance(kind, str) or kind not in known:
        raise BindingError(f"has unknown kind {kind!r}; known: {', '.join(known)}")
    return kind


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _params(kind: str, external: bool, raw: object,
            site: Path | None) -> BaseModel | Mapping[str, Any]:
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise BindingError("has params that are not an object")
    if external:
        return dict(raw)
    from pydantic import ValidationError

    from compiler.contract.provider_params import BUILTIN_PARAMS, site_relative_fields

    model = BUILTIN_PARAMS[kind]
    try:
        params = model.model_validate(raw)
    except ValidationError as err:
        raise BindingError("; ".join(
            f"param {'.'.join(map(str, e['loc']))}: {e['msg'].removeprefix('Value error, ')}"
            for e in err.errors(include_url=False, include_input=False))) from None
    if site is None:
        return params
    update = {key: str((site / value).resolve()) for key in site_relative_fields(model)
              if isinstance(value := getattr(params, key), str) and not Path(value).is_absolute()}
    return params.model_copy(update=update) if update else params


def _via(doc: Mapping[str, Any]) -> Via:
    """Where the provider runs: absent is in-process; a proxied one needs its proxy."""
    via = doc.get("via", "in-process")
    if via not in get_args(Via):
        raise BindingError(f"has 'via' {via!r}; known: {', '.join(get_args(Via))}")
    if via == "proxy" and not isinstance(doc.get("proxy"), str):
        raise BindingError("runs 'via' a proxy but names no 'proxy'")
    return "proxy" if via == "proxy" else "in-process"


def _proxied(name: str, written: object) -> None:
    """A provider's ``via`` checked when the file is read (the rest of its binding waits
    until it is opened): where each provider runs must be known before any is."""
    if isinstance(written, Mapping):
        try:
            _via(written)
        except BindingError as err:
            raise BindingError(f"provider {name!r} {err}") from None


def _command(raw: object) -> tuple[str, ...]:
    if not isinstance(raw, list) or not raw or not all(isinstance(c, str) for c in raw):
        raise BindingError("needs 'command': a non-empty list of argv strings")
    return tuple(raw)


def _secrets(raw: object) -> dict[str, str]:
    """The binding's secrets, each a reference; a value is refused without echoing it."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise BindingError("has secrets that are not an object")
    for key, ref in raw.items():
        if not is_reference(ref):
            raise BindingError(f"secret {key!r} must be a reference ({REFERENCE_FORMS}), "
                               "not a value")
    return dict(raw)


def _positive(doc: Mapping[str, Any], key: str, default: float, unit: str, *,
              whole: bool = False) -> float:
    """``doc[key]``, a positive number (an integer if ``whole``), or ``default`` if absent."""
    value = doc.get(key)
    if value is None:
        return default
    types = int if whole else int | float
    if not isinstance(value, types) or isinstance(value, bool) or value <= 0:
        raise BindingError(f"needs a positive '{key}' ({unit})")
    return value
