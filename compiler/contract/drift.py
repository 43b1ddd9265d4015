"""Compiled drift (``build/drift.json``): which drift is accepted and whom ``xce-drift`` mails.

The one definition of the format: the compiler writes it from the site's ``drift:`` sections
(``compiler.emit.drift``) and ``xce-drift`` reads it back (``CompiledDrift.from_json``)
through the same models, so a rule means the same on both sides. It says how drift is
reported, not what is desired: it is not in the supply map and never changes the desired
digest. The rules and ``notify`` are the site-config's own items (docs/drift.md), each
compiled rule with the place it is written.

The value types raise pydantic errors of their own types (``drift_glob``, ``drift_date``,
…): the compiler turns each into its problem code (``compiler.model.drift.OWN_MESSAGES``).
"""

from __future__ import annotations

import datetime
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from compiler.contract.vocabulary import ConfigKind
from compiler.core import forms
from compiler.core.forms import JsonForm, char_class, given
from compiler.core.globs import MAX_GLOB, glob_problem
from compiler.core.names import invisible_reason, shown
from compiler.core.secrets import is_reference
from compiler.core.times import parse_date
from compiler.core.types import (
    MAX_REASON,
    Label,
    Name,
    PositiveDuration,
    Strict,
    VolumePath,
    one_line,
)

DIGEST_DAYS = {"daily": 1, "weekly": 7, "never": None}
DEFAULT_PORTS = {"starttls": 587, "implicit": 465, "none": 25}

# -- value types ----------------------------------------------------------------------------


def _glob(value: Any) -> str:
    if not isinstance(value, str):
        raise PydanticCustomError("drift_glob", "expected a glob (text), got {kind}",
                                  {"kind": type(value).__name__})
    why = glob_problem(value)
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
    found = parse_date(value)
    if found is None:
        raise PydanticCustomError("drift_date", "expected a date like 2027-06-30, got {value}",
                                  {"value": shown(value) if isinstance(value, str) else
                                   repr(value)})
    return found


ExpiryDate = Annotated[datetime.date, BeforeValidator(_date), JsonForm(forms.policy_date_form)]


def _reason(text: str) -> str:
    return one_line(text, "a reason is required: say why this drift is accepted")


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

# -- rules, waivers and notify ----------------------------------------------------------------

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
    kind: ConfigKind | None = Field(
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

    kind: ConfigKind | None = Field(
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


# -- the compiled form, build/drift.json ----------------------------------------------------

_WHERE = "where it is written: file:line:column, the file relative to the site folder"


class DriftFileError(ValueError):
    """A drift.json that is not as the compiler writes it; the message names the first
    wrong value's place (``ignore.0.kind: …``)."""


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

    @classmethod
    def from_json(cls, doc: object) -> CompiledDrift:
        """drift.json as read (an empty object: none written); DriftFileError if it is not
        as the compiler writes it."""
        try:
            return cls.model_validate(doc)
        except ValidationError as err:
            first = err.errors(include_url=False)[0]
            place = ".".join(str(p) for p in first["loc"])
            raise DriftFileError(f"{place}: {first['msg']}") from None
