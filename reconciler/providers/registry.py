"""From a binding (``build/bindings.json``) to a ready Transport for that provider.

Built-in kinds are imported only when bound, so a site without a controller map never
loads it. Each built-in keeps its state in ``<workdir>/providers/<name>/``; a
persistent JSON-lines provider writes its stderr there too.
"""

from __future__ import annotations

import importlib
import sqlite3
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from reconciler.protocol import ErrorCode, ProviderError, Reply, Request, redact, secret_values
from reconciler.providers.base import state_dir
from reconciler.transports import BuiltinTransport, ExecTransport, JsonLinesTransport, Transport
from reconciler.transports.base import DEFAULT_MAX_REPLY_BYTES, DEFAULT_TIMEOUT, named_error

BUILTINS = {
    "directory": ("reconciler.providers.directory", "DirectoryProvider"),
    "dataset-copy": ("reconciler.providers.dataset_copy", "DatasetCopyProvider"),
    "controller-map": ("reconciler.providers.controller_map.provider", "ControllerMapProvider"),
}
EXTERNAL = ("exec", "jsonl")
KINDS = (*BUILTINS, *EXTERNAL)


class Bound:
    """Adds the binding to every request: its secret references (a request's own win) and,
    for an external provider, its ``params`` as ``config`` (a built-in got them at start).

    Only references travel; the provider resolves them when it needs the value.
    """

    def __init__(self, inner: Transport, secrets: Mapping[str, str],
                 config: Mapping[str, Any]) -> None:
        self.name = inner.name
        self.inner = inner
        self.secrets = dict(secrets)
        self.config = dict(config)

    def call(self, request: Request) -> Reply:
        reply = self.inner.call(replace(request, secrets={**self.secrets, **request.secrets},
                                        config=request.config or self.config))
        if reply.ok or reply.error is None:
            return reply
        return Reply.failure(ProviderError(reply.error.code, self._scrub(reply.error.message),
                                           reply.error.retryable))

    def _scrub(self, text: str) -> str:
        """A provider may echo a resolved secret in its error; it is never shown."""
        return redact(text, secret_values(self.secrets.values()))

    def close(self) -> None:
        self.inner.close()


def secret_refs(name: str, raw: object) -> dict[str, str]:
    """The binding's secrets, each a reference; a value is refused without echoing it."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise named_error(name, ErrorCode.INVALID_ARGUMENT, "has secrets that are not an object")
    for key, ref in raw.items():
        kind, _, target = str(ref).partition(":") if isinstance(ref, str) else ("", "", "")
        if kind not in ("env", "file") or not target:
            raise named_error(
                name,
                ErrorCode.INVALID_ARGUMENT,
                f"secret {key!r} must be a reference (env:NAME or file:PATH), not a value",
            )
    return dict(raw)


def _command(name: str, binding: Mapping[str, Any]) -> list[str]:
    command = binding.get("command")
    if not isinstance(command, list) or not command or not all(isinstance(c, str) for c in command):
        raise named_error(
            name, ErrorCode.INVALID_ARGUMENT, "needs 'command': a non-empty list of argv strings"
        )
    return command


def _limits(name: str, binding: Mapping[str, Any]) -> tuple[float, int]:
    """The binding's ``timeout`` (seconds) and ``max_reply_bytes``, for every kind."""
    timeout = binding.get("timeout")
    if timeout is None:
        timeout = DEFAULT_TIMEOUT
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
        raise named_error(name, ErrorCode.INVALID_ARGUMENT, "needs a positive 'timeout' (seconds)")
    cap = binding.get("max_reply_bytes")
    if cap is None:
        cap = DEFAULT_MAX_REPLY_BYTES
    if not isinstance(cap, int) or isinstance(cap, bool) or cap <= 0:
        raise named_error(name, ErrorCode.INVALID_ARGUMENT,
                          "needs a positive 'max_reply_bytes' (bytes)")
    return float(timeout), cap


def _builtin(name: str, kind: str, params: Mapping[str, Any], workdir: Path,
             limits: tuple[float, int]) -> Transport:
    module_name, class_name = BUILTINS[kind]
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as err:
        detail = f"kind {kind!r} is not available: {err}"
        raise named_error(name, ErrorCode.UNAVAILABLE, detail) from None
    try:
        provider = cls(name, params, workdir)
    except ProviderError as err:
        raise named_error(name, err.code, f"cannot start: {err.message}") from None
    except (OSError, sqlite3.Error) as err:
        raise named_error(name, ErrorCode.UNAVAILABLE, f"cannot start: {err}") from None
    except Exception as err:  # a provider bug: its entries become unknown, the plan goes on
        detail = f"cannot start: {type(err).__name__}: {err}"
        raise named_error(name, ErrorCode.INTERNAL, detail) from None
    return BuiltinTransport(name, provider, *limits)


def open_provider(name: str, binding: Mapping[str, Any], workdir: Path) -> Transport:
    """The transport for one bound provider; a bad binding raises a ProviderError naming it."""
    if not isinstance(binding, Mapping):
        raise named_error(name, ErrorCode.INVALID_ARGUMENT, "has a binding that is not an object")
    kind = binding.get("kind")
    params = binding.get("params") or {}
    if not isinstance(params, Mapping):
        raise named_error(name, ErrorCode.INVALID_ARGUMENT, "has params that are not an object")
    secrets = secret_refs(name, binding.get("secrets"))
    transport: Transport
    if isinstance(kind, str) and kind in BUILTINS:
        transport = _builtin(name, kind, params, workdir, _limits(name, binding))
    elif kind in EXTERNAL:
        command = _command(name, binding)
        timeout, cap = _limits(name, binding)
        # External providers run in their own state folder, where they may keep state.
        home = state_dir(workdir, name)
        try:
            home.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise named_error(name, ErrorCode.UNAVAILABLE, f"cannot start: {err}") from None
        external = ExecTransport if kind == "exec" else JsonLinesTransport
        # Both write stderr to the same log, with the binding's secrets redacted.
        transport = external(name, command, timeout, stderr_path=home / "stderr.log", cwd=home,
                             max_reply_bytes=cap, secrets=tuple(secrets.values()))
    else:
        detail = f"has unknown kind {kind!r}; known: {', '.join(KINDS)}"
        raise named_error(name, ErrorCode.INVALID_ARGUMENT, detail)
    config = params if kind in EXTERNAL else {}
    return Bound(transport, secrets, config) if secrets or config else transport
