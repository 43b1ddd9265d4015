"""The one interface every transport offers, and the errors a broken channel turns into.

``call`` never raises for a misbehaving provider: a provider that fails, times out or
answers garbage becomes a failed ``Reply`` whose message names the provider, so the
live map and the applier handle every failure through one path.
"""

from __future__ import annotations

from typing import Any, Protocol

import orjson

# The binding format's defaults, for the transports' callers.
from compiler.contract.bindings import DEFAULT_MAX_REPLY_BYTES as DEFAULT_MAX_REPLY_BYTES
from compiler.contract.bindings import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT
from compiler.core.units import format_size
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


def reply_too_large(provider: str, limit: int, stopped: str = "killed") -> ProviderError:
    """A reply past the binding's cap: the provider is stopped and the call fails.

    INTERNAL, as for any reply that breaks the protocol: not retryable (the same request
    would bring the same reply), and for a change the outcome is unknown (the provider may
    have done it before it answered), so the applier keeps the op in doubt. Not
    RESOURCE_EXHAUSTED, which says that the provider had no room and did nothing."""
    return named_error(
        provider,
        ErrorCode.INTERNAL,
        f"wrote a reply larger than its limit of {format_size(limit)} ({stopped}); if the "
        "reply is meant to be that large, raise the provider's max_reply_bytes in site-config",
    )


def decode_document(provider: str, raw: bytes | bytearray) -> Any:
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


def preview(raw: bytes | bytearray, limit: int = 120) -> str:
    """A short, single-line excerpt of what a provider wrote, for error messages."""
    text = bytes(raw[: limit * 4]).decode("utf-8", "replace").strip().replace("\n", "\\n")
    cut = len(text) > limit or len(raw) > limit * 4  # a reply may be huge: never decode it all
    return repr(text[:limit] + "…" if cut else text)
