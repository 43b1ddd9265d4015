"""The provider protocol (BRIEF §3, CSI-shaped): requests, replies and error codes.

The same JSON shapes travel in-process (built-in providers), over an ``exec`` call
(one request on stdin, one reply on stdout) and over persistent JSON lines.
Secrets travel only as references (``env:NAME`` or ``file:/path``, see ``compiler.core.secrets``).

Every provider answers the core verbs. The optional capabilities are CSI's controller
capabilities (R4): a provider declares in ``info`` which it offers (``Capabilities``),
and a request for one it does not offer is refused with ``UNIMPLEMENTED`` — by the
caller before it is sent and by every in-process provider — never attempted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from compiler.contract.entry import segments_error
from compiler.contract.supply_map import Session
from compiler.core.names import too_long_reason
from compiler.core.secrets import SecretError, resolve

CORE_VERBS = ("info", "probe", "inventory", "create", "update", "delete", "capacity")
# Optional capability -> the verbs it adds (CSI: PUBLISH_UNPUBLISH_VOLUME with
# PUBLISH_READONLY, EXPAND_VOLUME, CREATE_DELETE_SNAPSHOT, VOLUME_ACCESSIBILITY_CONSTRAINTS).
# ``topology`` adds no verb: it is ``Request.topology`` on create and the
# ``attributes.topology`` of inventory entries.
OPTIONAL: Mapping[str, tuple[str, ...]] = {
    "publish": ("publish", "unpublish"),
    "expand": ("expand",),
    "snapshot": ("snapshot",),
    "topology": (),
}
OPTIONAL_VERBS = tuple(verb for verbs in OPTIONAL.values() for verb in verbs)
VERBS = CORE_VERBS + OPTIONAL_VERBS
ACCESS_MODES = ("read-only", "read-write")  # of a publish (CSI: readonly or not)
PUBLISH_LOCATIONS = ("host", "group")  # where a publish goes: host/<name>, group/<name>
TOPOLOGY = "topology"  # an inventory entry's topology segments: attributes.topology


class ErrorCode(StrEnum):
    ALREADY_EXISTS = "ALREADY_EXISTS"
    NOT_FOUND = "NOT_FOUND"
    FAILED_PRECONDITION = "FAILED_PRECONDITION"
    RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED"
    UNAVAILABLE = "UNAVAILABLE"
    ABORTED = "ABORTED"
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"
    INTERNAL = "INTERNAL"
    UNIMPLEMENTED = "UNIMPLEMENTED"  # an optional capability the provider does not offer
    # a proxy's scoped allowlist does not allow the call's opcode (deny by default)
    PERMISSION_DENIED = "PERMISSION_DENIED"


RETRYABLE = frozenset({ErrorCode.UNAVAILABLE, ErrorCode.DEADLINE_EXCEEDED})


Segments = Mapping[str, str]  # one place in the site's topology: {"rack": "A01", "switch": "s1"}


def segments(value: object, what: str) -> dict[str, str]:
    """A topology segment map, checked: an extensible map of keys (R5) to labels.

    Keys are names (any site key, not a fixed list); values are printable labels bounded
    like names, as racks are in site-config (``compiler.contract.entry.segments_error``, the
    rule live entries are held to). Anything else is INVALID_ARGUMENT."""
    why = segments_error(value, what)
    if why is not None:
        raise ProviderError(ErrorCode.INVALID_ARGUMENT, why)
    assert isinstance(value, Mapping)
    return dict(value)


def _segment_list(value: object, what: str) -> tuple[dict[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ProviderError(ErrorCode.INVALID_ARGUMENT, f"{what} must be a list of segments")
    return tuple(segments(item, f"{what}[{i}]") for i, item in enumerate(value))


@dataclass(frozen=True, slots=True)
class TopologyRequirement:
    """Where what a create makes must be reachable (``requisite``, any one of them) and
    should be (``preferred``, in order): CSI's accessibility requirements. A segment map
    matches a place when each of its keys has the place's value (``{"rack": "A01"}``
    matches ``{"rack": "A01", "switch": "s1"}``)."""

    requisite: tuple[Segments, ...] = ()
    preferred: tuple[Segments, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"requisite": [dict(s) for s in self.requisite],
                "preferred": [dict(s) for s in self.preferred]}

    @classmethod
    def from_json(cls, doc: object) -> TopologyRequirement:
        if not isinstance(doc, Mapping) or set(doc) - {"requisite", "preferred"}:
            raise ProviderError(ErrorCode.INVALID_ARGUMENT,
                                "topology must be an object with 'requisite' and/or 'preferred'")
        made = cls(_segment_list(doc.get("requisite"), "topology.requisite"),
                   _segment_list(doc.get("preferred"), "topology.preferred"))
        if not made.requisite and not made.preferred:
            raise ProviderError(ErrorCode.INVALID_ARGUMENT, "topology names no segment")
        return made

    def allows(self, place: Segments) -> bool:
        """Whether ``place`` satisfies the requisite topology (any place does without one)."""
        return not self.requisite or any(_matches(r, place) for r in self.requisite)

    def choose(self, places: Sequence[Segments]) -> Segments | None:
        """The place to use among those a provider can reach: the first preferred one
        that is allowed, else the first allowed one; None when none is allowed."""
        allowed = [p for p in places if self.allows(p)]
        for wish in self.preferred:
            for place in allowed:
                if _matches(wish, place):
                    return place
        return allowed[0] if allowed else None


def _matches(wanted: Segments, place: Segments) -> bool:
    return all(place.get(key) == value for key, value in wanted.items())


@dataclass(frozen=True, slots=True)
class Request:
    verb: str
    op_id: str = ""
    epoch: int = 0
    owner: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    secrets: Mapping[str, str] = field(default_factory=dict)
    config: Mapping[str, Any] = field(default_factory=dict)  # an external provider's params
    topology: TopologyRequirement | None = None  # on create, for a provider offering it

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "verb": self.verb,
            "op_id": self.op_id,
            "epoch": self.epoch,
            "owner": self.owner,
            "params": dict(self.params),
            "secrets": dict(self.secrets),
        }
        if self.config:
            doc["config"] = dict(self.config)
        if self.topology is not None:
            doc["topology"] = self.topology.to_json()
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Request:
        if not isinstance(doc, Mapping) or not isinstance(doc.get("verb"), str):
            raise ProviderError(
                ErrorCode.INVALID_ARGUMENT, "request must be an object with a 'verb'"
            )
        return cls(
            verb=doc["verb"],
            op_id=str(doc.get("op_id") or ""),
            epoch=int(doc.get("epoch") or 0),
            owner=str(doc.get("owner") or ""),
            params=doc.get("params") or {},
            secrets=doc.get("secrets") or {},
            config=doc.get("config") or {},
            topology=None if doc.get("topology") is None
            else TopologyRequirement.from_json(doc["topology"]),
        )


class ProviderError(Exception):
    """An error a provider reports, in the gRPC/CSI family, with whether a retry may help."""

    def __init__(self, code: ErrorCode, message: str, retryable: bool | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retryable = code in RETRYABLE if retryable is None else retryable

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code.value, "message": self.message, "retryable": self.retryable}


@dataclass(frozen=True, slots=True)
class Reply:
    ok: bool
    result: Mapping[str, Any] = field(default_factory=dict)
    error: ProviderError | None = None

    def to_json(self) -> dict[str, Any]:
        if self.ok:
            return {"ok": True, "result": dict(self.result)}
        assert self.error is not None
        return {"ok": False, "error": self.error.to_json()}

    @classmethod
    def success(cls, result: Mapping[str, Any]) -> Reply:
        return cls(True, result)

    @classmethod
    def failure(cls, error: ProviderError) -> Reply:
        return cls(False, {}, error)

    @classmethod
    def from_json(cls, doc: Any) -> Reply:
        """Parse a reply; anything malformed becomes an INTERNAL error naming what was wrong."""
        if not isinstance(doc, Mapping) or not isinstance(doc.get("ok"), bool):
            raise ProviderError(ErrorCode.INTERNAL, "reply is not an object with a boolean 'ok'")
        if doc["ok"]:
            result = doc.get("result", {})
            if not isinstance(result, Mapping):
                raise ProviderError(ErrorCode.INTERNAL, "reply 'result' is not an object")
            return cls.success(result)
        err = doc.get("error")
        if not isinstance(err, Mapping):
            raise ProviderError(ErrorCode.INTERNAL, "failed reply has no 'error' object")
        try:
            code = ErrorCode(str(err.get("code")))
        except ValueError:
            code = ErrorCode.INTERNAL
        retry = err.get("retryable")
        return cls.failure(
            ProviderError(
                code, str(err.get("message", "")), retry if isinstance(retry, bool) else None
            )
        )


def inventory_session(result: Mapping[str, Any]) -> Session | None:
    """The optional ``session`` of an inventory result (P8): since when the provider serves
    its present session. A malformed one is the provider's bug (INTERNAL): a provider that
    cannot say when it restarted cannot say that it has settled either."""
    raw = result.get("session")
    if raw is None:
        return None
    try:
        return Session.from_json(raw)
    except ValueError as err:
        raise ProviderError(ErrorCode.INTERNAL, f"inventory {err}") from None


def _invalid(message: str) -> ProviderError:
    return ProviderError(ErrorCode.INVALID_ARGUMENT, message)


def _target(params: Mapping[str, Any]) -> str | None:
    """The entry id a request is about: ``params.id``, else ``params.entry.id``."""
    target = params.get("id")
    if not isinstance(target, str):
        entry = params.get("entry")
        target = entry.get("id") if isinstance(entry, Mapping) else None
    return target if isinstance(target, str) else None


def _byte_count(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _invalid(f"{what} must be a whole number of bytes, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class PublishParams:
    """``publish``/``unpublish`` params: which entry, to which location, how (CSI's
    ControllerPublishVolume: volume, node, readonly)."""

    id: str
    location: str  # host/<name> or group/<name>
    access: str | None  # ACCESS_MODES; None for unpublish

    @classmethod
    def from_params(cls, params: Mapping[str, Any], verb: str) -> PublishParams:
        target, location = params.get("id"), params.get("location")
        if not isinstance(target, str) or not target:
            raise _invalid(f"{verb} needs params.id, the entry to {verb}")
        kind, _, name = location.partition("/") if isinstance(location, str) else ("", "", "")
        if kind not in PUBLISH_LOCATIONS or not name or "/" in name or too_long_reason(name):
            raise _invalid(f"{verb} needs params.location, host/<name> or group/<name>, "
                           f"got {location!r}")
        access = params.get("access")
        if verb == "publish" and access not in ACCESS_MODES:
            raise _invalid(f"publish needs params.access, {' or '.join(ACCESS_MODES)}, "
                           f"got {access!r}")
        return cls(target, str(location), str(access) if verb == "publish" else None)


@dataclass(frozen=True, slots=True)
class ExpandParams:
    """``expand`` params (CSI's ControllerExpandVolume capacity range): grow to at least
    ``required_bytes``, and never past ``limit_bytes``. Expanding never shrinks."""

    id: str
    required_bytes: int
    limit_bytes: int | None

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> ExpandParams:
        target = params.get("id")
        if not isinstance(target, str) or not target:
            raise _invalid("expand needs params.id, the entry to grow")
        required = _byte_count(params.get("required_bytes"), "expand params.required_bytes")
        limit = params.get("limit_bytes")
        if limit is not None and _byte_count(limit, "expand params.limit_bytes") < required:
            raise _invalid(f"expand params.limit_bytes {limit} is below required_bytes {required}")
        return cls(target, required, limit)


@dataclass(frozen=True, slots=True)
class Offer:
    """One optional capability a provider offers: for which entry kinds, and for
    ``publish`` the access modes, for ``topology`` the places it can reach."""

    kinds: tuple[str, ...]
    access: tuple[str, ...] = ()
    places: tuple[Segments, ...] = ()

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"kinds": list(self.kinds)}
        if self.access:
            doc["access"] = list(self.access)
        if self.places:
            doc["places"] = [dict(p) for p in self.places]
        return doc

    @classmethod
    def from_json(cls, doc: object, what: str) -> Offer:
        """An offer in a provider's info; a malformed one is the provider's bug (INTERNAL)."""
        try:
            if not isinstance(doc, Mapping):
                raise _invalid("it is not an object")
            return cls(_strings(doc.get("kinds"), "kinds"),
                       _strings(doc.get("access", []), "access"),
                       _segment_list(doc.get("places"), "places"))
        except ProviderError as err:
            raise ProviderError(ErrorCode.INTERNAL, f"info: {what}: {err.message}") from None


def _strings(value: object, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _invalid(f"{what} must be a list of strings")
    return tuple(value)


def capability_of(verb: str) -> str | None:
    """The optional capability ``verb`` belongs to; None for a core (or unknown) verb."""
    return next((cap for cap, verbs in OPTIONAL.items() if verb in verbs), None)


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a provider declares in ``info``: the optional capabilities it offers, and
    why it does not offer the others. The one check of a request against them."""

    provider: str
    offers: Mapping[str, Offer] = field(default_factory=dict)
    reasons: Mapping[str, str] = field(default_factory=dict)  # capability -> why not

    def info_json(self) -> dict[str, Any]:
        offered = [v for cap, verbs in OPTIONAL.items() if cap in self.offers for v in verbs]
        return {
            "verbs": [*CORE_VERBS, *offered],
            "optional": {cap: offer.to_json() for cap, offer in self.offers.items()},
            "unsupported": {cap: self.why_not(cap) for cap in OPTIONAL if cap not in self.offers},
        }

    @classmethod
    def from_info(cls, info: Mapping[str, Any]) -> Capabilities:
        """Read an ``info`` result. A provider written before the optional capabilities
        (no ``optional``) offers none; capabilities this version does not know are left out."""
        optional, unsupported = info.get("optional") or {}, info.get("unsupported") or {}
        if not isinstance(optional, Mapping) or not isinstance(unsupported, Mapping):
            raise ProviderError(ErrorCode.INTERNAL,
                                "info: 'optional' and 'unsupported' must be objects")
        offers = {cap: Offer.from_json(doc, f"optional.{cap}")
                  for cap, doc in optional.items() if cap in OPTIONAL}
        reasons = {cap: why for cap, why in unsupported.items()
                   if cap in OPTIONAL and cap not in offers and isinstance(why, str) and why}
        return cls(str(info.get("name") or "?"), offers, reasons)

    def why_not(self, capability: str) -> str:
        return self.reasons.get(capability) or "its info does not declare it"

    def check(self, request: Request) -> None:
        """Refuse ``request`` if it needs a capability this provider does not offer
        (``UNIMPLEMENTED``: a verb, a kind, an access mode, a topology), or if its optional
        params are malformed (``INVALID_ARGUMENT``); core requests pass untouched."""
        params = request.params if isinstance(request.params, Mapping) else {}
        kind = (_target(params) or "").partition("/")[0] or None
        cap = capability_of(request.verb)
        if cap is not None:
            self._require(cap, request.verb, kind)
        if cap == "publish":
            access = PublishParams.from_params(params, request.verb).access
            offered = self.offers[cap].access
            if access is not None and access not in offered:
                raise ProviderError(ErrorCode.UNIMPLEMENTED,
                                    f"provider {self.provider!r} does not offer {access} "
                                    f"publish; it offers {', '.join(offered) or 'none'}")
        if request.topology is not None:
            if request.verb != "create":
                raise _invalid(f"topology goes with create only, not with {request.verb}")
            self._require("topology", "create with a topology", kind)

    def _require(self, cap: str, what: str, kind: str | None) -> None:
        offer = self.offers.get(cap)
        head = f"provider {self.provider!r} does not offer {what}"
        if offer is None:
            raise ProviderError(ErrorCode.UNIMPLEMENTED,
                                f"{head} (optional capability {cap!r}): {self.why_not(cap)}")
        if kind is not None and kind not in offer.kinds:
            raise ProviderError(ErrorCode.UNIMPLEMENTED,
                                f"{head} for {kind} entries, only for {', '.join(offer.kinds)}")


def resolve_secret(reference: str) -> str:
    """Read a secret by reference at call time (``compiler.core.secrets.resolve``), as a provider
    error: FAILED_PRECONDITION when it cannot be read, INVALID_ARGUMENT for no reference."""
    try:
        return resolve(reference)
    except SecretError as err:
        code = ErrorCode.INVALID_ARGUMENT if err.not_a_reference else ErrorCode.FAILED_PRECONDITION
        raise ProviderError(code, err.message) from None
