"""The in-process transport: a Python provider object called directly.

Built-in providers speak the same Request/Reply objects as the wire, so conformance
tests and the applier treat them exactly like external ones. A crash inside a provider
is a bug there, reported as INTERNAL naming the provider instead of unwinding the caller.
"""

from __future__ import annotations

from typing import Protocol

from reconciler.protocol import ErrorCode, ProviderError, Reply, Request
from reconciler.transports.base import channel_error


class Handler(Protocol):
    def handle(self, request: Request) -> Reply: ...

    def close(self) -> None: ...


class BuiltinTransport:
    def __init__(self, name: str, provider: Handler) -> None:
        self.name = name
        self.provider = provider

    def call(self, request: Request) -> Reply:
        try:
            return self.provider.handle(request)
        except ProviderError as err:
            return Reply.failure(err)
        except Exception as exc:  # a provider bug must not crash the caller
            detail = f"failed: {type(exc).__name__}: {exc}"
            return channel_error(self.name, ErrorCode.INTERNAL, detail)

    def close(self) -> None:
        self.provider.close()
