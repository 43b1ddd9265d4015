"""The ``drift:`` section: how ``xce-drift`` screens drift and whom it mails (docs/drift.md).

``ignore`` rules and ``waivers`` say which drift is accepted — by entry id glob, entry kind,
provider and field, always with a reason; a waiver also has an owner and an expiry date,
after which the drift is reported again. ``notify`` holds the SMTP server, the addresses,
the routing of drift by kind or provider, and the digest period. Like ``policy:``, the
section may be split across files (the lists add up); ``notify`` is written in one file.

The compiler checks the section per file (these models) and across files
(``compile_drift``: providers that exist, one ``notify``, waivers near or past their
expiry) and writes it to ``build/drift.json``: it says how drift is reported, not what is
desired, so it is not in the supply map and never changes the desired digest. The
reconciler reads that file back through ``CompiledDrift``, the same models.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from dataclasses import field as dc_field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from compiler.core import codes, forms
from compiler.core.codes import (
    BAD_ADDRESS,
    BAD_DATE,
    BAD_GLOB,
    LOGIN_IN_CLEAR,
    MATCHES_EVERYTHING,
    WAIVER_EXPIRED,
    WAIVER_EXPIRES_SOON,
)
from compiler.core.forms import JsonForm, char_class, given
from compiler.core.names import did_you_mean, invisible_reason, shown
from compiler.core.problems import Hints, Problems, Severity, Where
from compiler.core.secrets import REFERENCE_FORMS, is_reference
from compiler.core.types import Label, Name, PositiveDuration, Strict, VolumePath
from compiler.model.datasets import MAX_REASON, _one_line
from compiler.model.site import EntryKind
from compiler.policy.reader import as_date
from compiler.policy.waivers import days_left

if TYPE_CHECKING:
    from compiler.model.document import Located, SiteDocument
    from compiler.source.yaml_source import SourceFile

# Unknown keys, missing keys and wrong types are the language's own (XCE101, XCE105, XCE102).
HINTS = Hints({
    BAD_GLOB: "write an fnmatch glob: text with '*', '?' and '[...]' sets, e.g. "
    "volume-dir/scratch/*",
    BAD_DATE: "write the last day it holds as YYYY-MM-DD, e.g. 2027-06-30",
    WAIVER_EXPIRES_SOON: "renew it after review (a later 'expires'), or fix the drift it waives",
    WAIVER_EXPIRED: "fix the drift, renew the waiver after review, or remove it",
    MATCHES_EVERYTHING: "name what it is about: 'entries', 'kind', 'provider' or 'field'",
    BAD_ADDRESS: "write name@example.org, or a name and the address: Drift <drift@example.org>",
    LOGIN_IN_CLEAR: "use tls: starttls or implicit, or a server that needs no login",
})
WARN_DAYS = 7  # a drift waiver's expiry is warned of this many days ahead
MAX_GLOB = 1000  # characters; entry ids of nested kinds are long, a glob need not be longer
DIGEST_DAYS = {"daily": 1, "weekly": 7, "never": None}
DEFAULT_PORTS = {"starttls": 587, "implicit": 465, "none": 25}

# -- value types ----------------------------------------------------------------------------


def _glob_problem(text: str) -> str | None:
    """Why ``text`` is no glob xce-drift can use (None: it is one). fnmatch itself takes a
    lone '[' as a character, which is never what an admin meant."""
    if not text.strip():
        return "it is blank"
    if len(text) > MAX_GLOB:
        return f"it has {len(text)} characters; at most {MAX_GLOB}"
    if not text.isprintable():
        return invisible_reason(text) or "it contains a control character"
    for part in re.split(r"(\[[^\[\]]*\])", text):
        if part.startswith("[") and part.endswith("]") and len(part) > 1:
            body = part[1:-1].removeprefix("!")
            if not body:
                return f"the set {part!r} holds no character"
            if any(a > b for a, b in re.findall(r"(.)-(.)", body)):
                return f"the set {part!r} has a range that runs backwards"
        elif "[" in part or "]" in part:
            return f"{'[' if '[' in part else ']'} without its partner (a set is [abc] or [!abc])"
    return None


def _glob(value: Any) -> str:
    if not isinstance(value, str):
        raise PydanticCustomError("drift_glob", "expected a glob (text), got {kind}",
                                  {"kind": type(value).__name__})
    why = _glob_problem(value)
    if why is not None:
        raise PydanticCustomError("drift_glob", "{glob} is not a glob: {why}",
                                  {"glob": repr(value), "why": why})
    return value


def glob_form() -> dict[str, Any]:
    bad = "\\[\\]" + char_class("unprintable")
    return {
        "type": "string",
        "pattern": f"^(?=.*[^{char_class('space')}])(?:[^{bad}]|\\[!?[^{bad}]+\\])+$",
        "maxLength": MAX_GLOB,
        "errorMessage": "an fnmatch glob: text with '*', '?' and [abc] or [!abc] sets",
    }


Glob = Annotated[str, BeforeValidator(_glob), JsonForm(glob_form)]


def _date(value: Any) -> datetime.date:
    found = as_date(value)
    if found is None:
        raise PydanticCustomError("drift_date", "expected a date like 2027-06-30, got {value}",
                                  {"value": shown(value) if isinstance(value, str) else
                                   repr(value)})
    return found


ExpiryDate = Annotated[datetime.date, BeforeValidator(_date), JsonForm(forms.policy_date_form)]


def _reason(text: str) -> str:
    if not text.strip():
        raise ValueError("a reason is required: say why this drift is accepted")
    return _one_line(text)


Reason = Annotated[str, AfterValidator(_reason), JsonForm(lambda: forms.reason_form(MAX_REASON))]

_LOCAL = "[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+"
_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
ADDRESS = f"{_LOCAL}@{_LABEL}(?:\\.{_LABEL})*"
_ADDRESS_RE = re.compile(f"(?:(.*[^ ]) <)?({ADDRESS})(?(1)>)")
_NOT_IN_NAMES = frozenset('<>"\\')


def _address(value: Any) -> str:
    """An address as a header may carry it, alone or after a name: no line break (no header
    injection), no quoting or comments for a mail client to read otherwise."""
    match = _ADDRESS_RE.fullmatch(value) if isinstance(value, str) else None
    name = match.group(1) if match else None
    if match is None or (name is not None and (not name.isprintable() or invisible_reason(name)
                                               or _NOT_IN_NAMES & set(name))):
        raise PydanticCustomError("drift_address", "{value} is not an email address",
                                  {"value": shown(value) if isinstance(value, str) else
                                   repr(value)})
    return match.string


def address_form() -> dict[str, Any]:
    bad = f'<>"\\\\{char_class("unprintable")}'
    return {"type": "string", "pattern": f"^(?:{ADDRESS}|[^{bad}]*[^ {bad}] <{ADDRESS}>)$",
            "errorMessage": "an email address: name@example.org, or Name <name@example.org>"}


Address = Annotated[str, BeforeValidator(_address), JsonForm(address_form)]
Addresses = Annotated[list[Address], Field(min_length=1)]


def _secret(value: Any) -> Any:
    """A reference only: the value of a literal is never shown, not even in the error."""
    if not is_reference(value):
        raise PydanticCustomError("drift_secret", "the SMTP password is not a reference (the "
                                  "value is not shown)")
    return value


SecretReference = Annotated[str, BeforeValidator(_secret), JsonForm(forms.reference_form)]
# pydantic error type -> (code, hint), for compiler/model/errors.py
OWN_MESSAGES = {
    "drift_glob": (BAD_GLOB, HINTS[BAD_GLOB]),
    "drift_date": (BAD_DATE, HINTS[BAD_DATE]),
    "drift_address": (BAD_ADDRESS, HINTS[BAD_ADDRESS]),
    "drift_secret": (codes.LITERAL_SECRET, f"write a reference: {REFERENCE_FORMS}"),
    "drift_everything": (MATCHES_EVERYTHING, HINTS[MATCHES_EVERYTHING]),
    "drift_clear_login": (LOGIN_IN_CLEAR, HINTS[LOGIN_IN_CLEAR]),
}

# -- the section ------------------------------------------------------------------------------

_MATCHERS = ("entries", "kind", "provider", "field")


def _about_something() -> dict[str, Any]:
    """``Match._about_something`` as a schema condition."""
    return {"anyOf": [given(key) for key in _MATCHERS]}


class Match(Strict):
    """What a rule or waiver is about: every key written must match (docs/drift.md)."""

    model_config = ConfigDict(json_schema_extra=_about_something())

    entries: Glob | None = Field(
        None, description="the entry ids it is about, as an fnmatch glob ('*' also spans '/')",
        examples=["volume-dir/scratch/*"],
    )
    kind: EntryKind | None = Field(
        None, description="the entry kind it is about", examples=["volume-dir"]
    )
    provider: Name | None = Field(
        None, description="the provider it is about", examples=["shared-fs"]
    )
    field: Glob | None = Field(
        None, description="the fields it is about (a glob on the path); a drift of any other "
        "field is still reported", examples=["spec.mode"],
    )

    @model_validator(mode="after")
    def _about_something(self) -> Match:
        if all(getattr(self, key) is None for key in _MATCHERS):
            raise PydanticCustomError("drift_everything", "this rule would match every drift")
        return self


class IgnoreRule(Match):
    """Drift that is accepted for good: counted in the report, never recorded or mailed."""

    reason: Reason = Field(
        description="why this drift is accepted; shown beside the drift in the report",
        examples=["scratch directories are cleaned by the purge job, not by us"],
    )


class DriftWaiver(Match):
    """Drift accepted until a date: after it, the drift is reported (and mailed) again."""

    owner: Label = Field(
        description="who answers for it: a person or team, best an address",
        examples=["alice@example.org"],
    )
    reason: Reason = Field(
        description="why the drift is accepted for now; shown in the report",
        examples=["the migration to the new filesystem moves these directories by hand"],
    )
    expires: ExpiryDate = Field(
        description="the last day it holds; the compiler warns a week ahead",
        examples=["2027-06-30"],
    )


def _route_schema() -> dict[str, Any]:
    return {"anyOf": [given("kind"), given("provider")]}


class MailRoute(Strict):
    """Drift of a kind or provider goes to its owners instead of the default addresses."""

    model_config = ConfigDict(json_schema_extra=_route_schema())

    kind: EntryKind | None = Field(
        None, description="the entry kind whose drift goes to these addresses",
        examples=["volume-dir"],
    )
    provider: Name | None = Field(
        None, description="the provider whose drift goes to these addresses",
        examples=["shared-fs"],
    )
    to: Addresses = Field(
        description="the owners' addresses", examples=[["storage-team@example.org"]]
    )

    @model_validator(mode="after")
    def _about_something(self) -> MailRoute:
        if self.kind is None and self.provider is None:
            raise PydanticCustomError("drift_everything", "this route would take every drift")
        return self


def _login_schema() -> dict[str, Any]:
    tls_none = {"required": ["tls"], "properties": {"tls": {"const": "none"}}}
    return {"allOf": [
        {"if": given("user"), "then": given("password")},
        {"if": given("password"), "then": given("user")},
        {"if": tls_none, "then": forms.unset("password", why="no login over a connection "
                                                  "in clear text: use starttls or implicit")},
    ]}


class Smtp(Strict):
    """The mail server xce-drift --notify sends through."""

    model_config = ConfigDict(json_schema_extra=_login_schema())

    host: Label = Field(description="the SMTP server's host name", examples=["smtp.example.org"])
    port: int | None = Field(
        None, ge=1, le=65535,
        description="its port (default 587 for starttls, 465 for implicit, 25 for none)",
        examples=[587],
    )
    tls: Literal["starttls", "implicit", "none"] = Field(
        "starttls",
        description="starttls: upgrade the connection; implicit: TLS from the start; none",
        examples=["starttls"],
    )
    ca_file: VolumePath | None = Field(
        None, description="the PEM certificates that sign the server's (default: the system's)",
        examples=["/etc/ssl/certs/site-ca.pem"],
    )
    user: Label | None = Field(None, description="the login's user name", examples=["xce-drift"])
    password: SecretReference | None = Field(
        None, description="the login's password, as a reference only",
        examples=["env:SMTP_PASSWORD"],
    )
    timeout: PositiveDuration = Field(
        30, description="how long the server may take to answer, each time", examples=["30s"]
    )

    @model_validator(mode="after")
    def _login(self) -> Smtp:
        if (self.user is None) != (self.password is None):
            raise ValueError("a login needs both 'user' and 'password'")
        if self.tls == "none" and self.password is not None:
            raise PydanticCustomError("drift_clear_login", "the password would cross the "
                                      "network in clear text (tls: none)")
        return self

    @property
    def address(self) -> str:
        """``host:port``, as every message about the server names it."""
        return f"{self.host}:{self.port or DEFAULT_PORTS[self.tls]}"


class Notify(Strict):
    """Whom ``xce-drift --notify`` mails, and how (docs/drift.md, "Email")."""

    smtp: Smtp = Field(
        description="the mail server",
        examples=[{"host": "smtp.example.org", "user": "xce-drift",
                   "password": "env:SMTP_PASSWORD"}],
    )
    sender: Address = Field(
        alias="from", description="the sender of the messages",
        examples=["xce-drift <xce-drift@example.org>"],
    )
    to: Addresses = Field(
        description="who gets the drift no route takes", examples=[["hpc-admins@example.org"]]
    )
    reply_to: Address | None = Field(
        None, description="where replies go (default: the sender)",
        examples=["hpc-admins@example.org"],
    )
    routes: list[MailRoute] | None = Field(
        None, description="drift of a kind or provider to its owners' addresses",
        examples=[[{"kind": "volume-dir", "to": ["storage-team@example.org"]}]],
    )
    digest: Literal["daily", "weekly", "never"] = Field(
        "weekly", description="how often a digest of all open drift is mailed, news or not",
        examples=["weekly"],
    )


class DriftSection(Strict):
    """The ``drift:`` section of one file."""

    ignore: list[IgnoreRule] | None = Field(
        None, description="drift accepted for good: counted, never mailed",
        examples=[[{"entries": "volume-dir/scratch/*", "reason": "the purge job owns these"}]],
    )
    waivers: list[DriftWaiver] | None = Field(
        None, description="drift accepted until a date",
        examples=[[{"entries": "host/cn0042", "owner": "alice@example.org",
                    "reason": "board replacement", "expires": "2027-06-30"}]],
    )
    notify: Notify | None = Field(
        None, description="how drift is mailed; in one file only",
        examples=[{"smtp": {"host": "smtp.example.org"}, "from": "xce-drift@example.org",
                   "to": ["hpc-admins@example.org"]}],
    )


# -- the compiled form, build/drift.json ----------------------------------------------------

_WHERE = "where it is written: file:line:column, the file relative to the site folder"


class CompiledIgnore(IgnoreRule):
    where: str = Field(description=_WHERE, examples=["drift.yaml:4:7"])


class CompiledWaiver(DriftWaiver):
    where: str = Field(description=_WHERE, examples=["drift.yaml:9:7"])


class CompiledDrift(Strict):
    """``build/drift.json``: every file's drift section, in the order of the files."""

    version: Literal[1] = Field(default=1, description="of this file's format", examples=[1])
    ignore: list[CompiledIgnore] = Field(default_factory=list, description="the ignore rules",
                                         examples=[[]])
    waivers: list[CompiledWaiver] = Field(default_factory=list, description="the waivers",
                                          examples=[[]])
    notify: Notify | None = Field(default=None, description="how drift is mailed",
                                  examples=[None])

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


def _known_provider(name: str | None, where: Where, providers: Sequence[str],
                    problems: Problems) -> None:
    if name is not None and name not in providers:
        problems.error(codes.UNKNOWN_NAME, f"unknown provider '{name}'",
                       did_you_mean(name, providers) or "providers: " + ", ".join(providers),
                       where)


def _check_expiry(w: DriftWaiver, where: Where, today: datetime.date,
                  problems: Problems) -> None:
    """A waiver past its date is a warning (its drift is reported again), and so is one
    whose date is a week away, by the policy waivers' rule (``days_left``)."""
    left = days_left(w.expires, today)
    on = w.expires.isoformat()
    if left is None:
        problems.add(HINTS.problem(
            WAIVER_EXPIRED, f"the drift waiver of {w.owner} expired on {on}: xce-drift reports "
            "its drift again", severity=Severity.WARNING, where=where))
    elif left <= WARN_DAYS:
        problems.add(HINTS.problem(
            WAIVER_EXPIRES_SOON, f"the drift waiver of {w.owner} expires in {left} day(s), on "
            f"{on}", severity=Severity.WARNING, where=where))


def _placer(files: Sequence[SourceFile], site: Path | None) -> Callable[[Where], str]:
    """``file:line:column`` of a rule, the file relative to the site folder (so drift.json
    is the same wherever the site is compiled from), else as problems show it."""
    from compiler.source.yaml_source import Locator

    locator = Locator(files)
    paths = {f.path: f.abspath for f in files}
    root = None if site is None else site.resolve()

    def place(where: Where) -> str:
        at = locator.locate(where)
        path = paths.get(at.file)
        if root is not None and path is not None and path.resolve().is_relative_to(root):
            at = replace(at, file=path.resolve().relative_to(root).as_posix())
        return at.label()

    return place


def compile_drift(doc: SiteDocument, files: Sequence[SourceFile], problems: Problems,
                  today: datetime.date, site: Path | None = None) -> CompiledDrift:
    """The site's drift sections as one, checked across files: each provider they name
    exists, ``notify`` is written once, and waivers near or past their date are warned of."""
    from compiler.contract.bindings import controller_name

    parts = doc.drift
    providers = sorted({p.item.name for p in doc.providers} | {controller_name(doc)}
                       | doc.invalid_names.get(("providers",), set()))
    located = _placer(files, site)
    matchers: list[tuple[Match, Where]] = [(r.item, r.where) for r in parts.ignore]
    matchers += [(w.item, w.where) for w in parts.waivers]
    for rule, where in matchers:
        _known_provider(rule.provider, where.child("provider"), providers, problems)
    for w in parts.waivers:
        _check_expiry(w.item, w.where.child("expires"), today, problems)
    for n in parts.notify:
        for i, route in enumerate(n.item.routes or ()):
            _known_provider(route.provider, n.where.child("routes", i, "provider"), providers,
                            problems)
    for n in parts.notify[1:]:
        problems.error(codes.DEFINED_TWICE, "'drift.notify' is defined twice",
                       "keep one 'notify:' under 'drift:'", n.where.at_key(),
                       also=[parts.notify[0].where.at_key()])
    return CompiledDrift(
        ignore=[CompiledIgnore(**r.item.model_dump(), where=located(r.where))
                for r in parts.ignore],
        waivers=[CompiledWaiver(**w.item.model_dump(), where=located(w.where))
                 for w in parts.waivers],
        notify=parts.notify[0].item if parts.notify else None,
    )


@dataclass(slots=True)
class DriftParts:
    """Every file's drift section, item by item with its place (``SiteDocument.drift``)."""

    ignore: list[Located[IgnoreRule]] = dc_field(default_factory=list)
    waivers: list[Located[DriftWaiver]] = dc_field(default_factory=list)
    notify: list[Located[Notify]] = dc_field(default_factory=list)


def _failed_part(loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """What an error at ``loc`` makes unusable: a list's item, else the key it is under."""
    if len(loc) >= 2 and loc[0] in _LISTS and isinstance(loc[1], int):
        return loc[:2]
    return loc[:1]


_LISTS: dict[str, type[Match]] = {"ignore": IgnoreRule, "waivers": DriftWaiver}


def read_section(parts: DriftParts, raw: Any, where: Where, problems: Problems) -> None:
    """One file's ``drift:`` section: every error reported, and each rule that is right
    kept with its place, so the compile still checks it across files (one bad rule hides
    no unknown provider in another)."""
    from compiler.model.document import Located
    from compiler.model.errors import problems_from

    failed: set[tuple[str | int, ...]] = set()
    try:
        DriftSection.model_validate(raw)
    except ValidationError as exc:
        problems.extend(problems_from(exc, DriftSection, where))
        failed = {_failed_part(tuple(e["loc"])) for e in exc.errors()}
    if not isinstance(raw, dict) or () in failed:
        return
    for key, model in _LISTS.items():
        items = raw.get(key)
        if isinstance(items, list) and (key,) not in failed:
            getattr(parts, key).extend(
                Located(model.model_validate(item), where.child(key, i))
                for i, item in enumerate(items) if (key, i) not in failed)
    if raw.get("notify") is not None and ("notify",) not in failed:
        parts.notify.append(Located(Notify.model_validate(raw["notify"]), where.child("notify")))
