"""The one interface every transport offers, and the errors a broken channel turns into.

``call`` never raises for a misbehaving provider: a provider that fails, times out or
answers garbage becomes a failed ``Reply`` whose message names the provider, so the
live map and the applier handle every failure through one path.
"""

from __future__ import annotations

from typing import Any, Protocol

import orjson

from reconciler.protocol import ErrorCode, ProviderError, Reply, Request


class Transport(Protocol):
    name: str

    def call(self, request: Request) -> Reply: ...

    def close(self) -> None: ...


def encode_request(request: Request, extra: dict[str, Any] | None = None) -> bytes:
    doc = request.to_json()
    if extra:
        doc.update(extra)
    return orjson.dumps(doc)


def named_error(provider: str, code: ErrorCode, detail: str) -> ProviderError:
    return ProviderError(code, f"provider '{provider}' {detail}")


def channel_error(provider: str, code: ErrorCode, detail: str) -> Reply:
    """A failed reply for a broken channel; the message always names the provider."""
    return Reply.failure(named_error(provider, code, detail))


def decode_document(provider: str, raw: bytes) -> Any:
    """Parse JSON a provider wrote; garbage raises INTERNAL naming the provider."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise named_error(
            provider, ErrorCode.INTERNAL, f"answered garbage (not JSON: {err}): {preview(raw)}"
        ) from None


def decode_reply(provider: str, doc: Any) -> Reply:
    """Turn a parsed reply document into a Reply; a wrong shape raises INTERNAL naming it."""
    try:
        return Reply.from_json(doc)
    except ProviderError as err:
        detail = f"answered garbage ({err.message})"
        raise named_error(provider, ErrorCode.INTERNAL, detail) from None


def preview(raw: bytes, limit: int = 120) -> str:
    """A short, single-line excerpt of what a provider wrote, for error messages."""
    text = raw.decode("utf-8", "replace").strip().replace("\n", "\\n")
    return repr(text if len(text) <= limit else text[:limit] + "…")
