"""The provider protocol (BRIEF §3, CSI-shaped): requests, replies and error codes.

The same JSON shapes travel in-process (built-in providers), over an ``exec`` call
(one request on stdin, one reply on stdout) and over persistent JSON lines.
Secrets travel only as references (``env:NAME`` or ``file:/path``, see ``compiler.secrets``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from compiler.secrets import SecretError, resolve

VERBS = ("info", "probe", "inventory", "create", "update", "delete", "capacity")


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


RETRYABLE = frozenset({ErrorCode.UNAVAILABLE, ErrorCode.DEADLINE_EXCEEDED})


@dataclass(frozen=True, slots=True)
class Request:
    verb: str
    op_id: str = ""
    epoch: int = 0
    owner: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    secrets: Mapping[str, str] = field(default_factory=dict)
    config: Mapping[str, Any] = field(default_factory=dict)  # an external provider's params

    def to_json(self) -> dict[str, Any]:
        doc = {
            "verb": self.verb,
            "op_id": self.op_id,
            "epoch": self.epoch,
            "owner": self.owner,
            "params": dict(self.params),
            "secrets": dict(self.secrets),
        }
        if self.config:
            doc["config"] = dict(self.config)
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


def resolve_secret(reference: str) -> str:
    """Read a secret by reference at call time (``compiler.secrets.resolve``), as a provider
    error: FAILED_PRECONDITION when it cannot be read, INVALID_ARGUMENT for no reference."""
    try:
        return resolve(reference)
    except SecretError as err:
        code = ErrorCode.INVALID_ARGUMENT if err.not_a_reference else ErrorCode.FAILED_PRECONDITION
        raise ProviderError(code, err.message) from None
