"""From a binding (``build/bindings.json``) to a ready Transport for that provider.

A binding is a ``compiler.contract.bindings.ProviderBinding``: a built-in provider is constructed
with its kind's params model, an external one gets its free-form params as ``config``.
Built-in kinds are imported only when bound, so a site without a controller map never
loads it. Each built-in keeps its state in ``<workdir>/providers/<name>/``; a
persistent JSON-lines provider writes its stderr there too.
"""

from __future__ import annotations

import importlib
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from compiler.contract.bindings import BindingError, Bindings, ProviderBinding
from compiler.core.private import private_dir
from compiler.core.secrets import Redactor
from reconciler.protocol import ErrorCode, ProviderError, Reply, Request
from reconciler.providers.base import state_dir
from reconciler.transports import BuiltinTransport, ExecTransport, JsonLinesTransport, Transport
from reconciler.transports.base import named_error

# Where each built-in kind of compiler.contract.provider_params.BUILTIN_KINDS is implemented.
BUILTINS = {
    "directory": ("reconciler.providers.directory", "DirectoryProvider"),
    "dataset-copy": ("reconciler.providers.dataset_copy", "DatasetCopyProvider"),
    "controller-map": ("reconciler.providers.controller_map.provider", "ControllerMapProvider"),
}


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
        return Redactor.of(self.secrets.values()).text(text)

    def close(self) -> None:
        self.inner.close()


def _builtin(name: str, binding: ProviderBinding, workdir: Path) -> Transport:
    module_name, class_name = BUILTINS[binding.kind]
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as err:
        detail = f"kind {binding.kind!r} is not available: {err}"
        raise named_error(name, ErrorCode.UNAVAILABLE, detail) from None
    try:
        provider = cls(name, binding.params, workdir)
    except ProviderError as err:
        raise named_error(name, err.code, f"cannot start: {err.message}") from None
    except (OSError, sqlite3.Error) as err:
        raise named_error(name, ErrorCode.UNAVAILABLE, f"cannot start: {err}") from None
    except Exception as err:  # a provider bug: its entries become unknown, the plan goes on
        detail = f"cannot start: {type(err).__name__}: {err}"
        raise named_error(name, ErrorCode.INTERNAL, detail) from None
    return BuiltinTransport(name, provider, binding.timeout, binding.max_reply_bytes)


def _external(name: str, binding: ProviderBinding, workdir: Path) -> Transport:
    assert binding.command is not None  # ProviderBinding.from_json: an external kind has one
    # External providers run in their own state folder, where they may keep state.
    home = state_dir(workdir, name)
    try:
        private_dir(home)  # as a built-in's: its ledger, state and log are nobody else's
    except OSError as err:
        raise named_error(name, ErrorCode.UNAVAILABLE, f"cannot start: {err}") from None
    external = ExecTransport if binding.kind == "exec" else JsonLinesTransport
    # Both write stderr to the same log, with the binding's secrets redacted.
    return external(name, list(binding.command), binding.timeout,
                    stderr_path=home / "stderr.log", cwd=home,
                    max_reply_bytes=binding.max_reply_bytes,
                    secrets=tuple(binding.secrets.values()))


def open_provider(name: str, binding: ProviderBinding | Mapping[str, Any],
                  workdir: Path) -> Transport:
    """The transport for one bound provider; a bad binding raises a ProviderError naming it.

    ``binding`` may be given as bindings.json holds it (read with ``ProviderBinding``)."""
    if not isinstance(binding, ProviderBinding):
        binding = _read(name, lambda: ProviderBinding.from_json(binding))
    if binding.kind in BUILTINS:
        transport = _builtin(name, binding, workdir)
        config: Mapping[str, Any] = {}
    else:
        transport = _external(name, binding, workdir)
        config = binding.params if isinstance(binding.params, Mapping) else {}
    if binding.secrets or config:
        return Bound(transport, binding.secrets, config)
    return transport


def open_bound(bindings: Bindings, name: str, workdir: Path) -> Transport:
    """The transport for provider ``name`` of ``bindings``, which must be bound."""
    return open_provider(name, _read(name, lambda: bindings.binding(name)), workdir)


def _read(name: str, read: Callable[[], ProviderBinding]) -> ProviderBinding:
    try:
        return read()
    except BindingError as err:
        raise named_error(name, ErrorCode.INVALID_ARGUMENT, str(err)) from None
