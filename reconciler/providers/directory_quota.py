"""How the directory provider enforces a quota: only recorded, or by running a real tool.

``ledger`` (the default) keeps the limit in the provider's state only: usage is charged
to the pool counter after the fact (N8), nothing on the filesystem enforces it.
``command`` runs a configured argv template (``setquota``, ``xfs_quota``, a site
script) with the limit filled in, with no shell; it also records the limit, because
quota tools have no portable way to read limits back.

The tool never gets a name it could resolve again: the provider opens the volume root
without following links, keeps that descriptor open, passes it to the tool (``pass_fds``)
and fills ``{path}`` with ``/proc/self/fd/N``, which names the open directory itself. A
volume top swapped for a link between the check and the tool's run cannot send the tool
elsewhere. (The tool keeps the provider's working directory, so a relative tool path in
the template means what it meant before.)
"""

from __future__ import annotations

import os
import string
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

from reconciler.protocol import ErrorCode, ProviderError
from reconciler.transports.process import exit_detail

# Placeholders an argv template may use.
FIELDS = ("scope", "subject", "bytes", "kib", "path", "volume")


def _invalid(message: str) -> ProviderError:
    return ProviderError(ErrorCode.INVALID_ARGUMENT, message)


class QuotaCommand:
    """Runs e.g. ``["setquota", "-u", "{subject}", "0", "{kib}", "0", "0", "{path}"]``."""

    def __init__(self, template: Sequence[str], timeout: float) -> None:
        self.template = tuple(template)
        self.timeout = timeout

    def run(self, *, scope: str, subject: str, limit: int, dir_fd: int, shown: str,
            volume: str) -> None:
        """Run the tool on the directory open at ``dir_fd`` (``shown`` names it in errors)."""
        path = f"/proc/self/fd/{dir_fd}"  # the same descriptor number in the tool
        if not os.path.isdir(path):
            raise ProviderError(ErrorCode.FAILED_PRECONDITION,
                                "quota_backend 'command' needs /proc (to hand the tool the "
                                f"verified directory {shown} rather than a name)")
        values = {
            "scope": scope,
            "subject": subject,
            "bytes": str(limit),
            "kib": str(-(-limit // 1024)),
            "path": path,
            "volume": volume,
        }
        argv = [part.format_map(values) for part in self.template]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=self.timeout, check=False,
                                  pass_fds=(dir_fd,))
        except FileNotFoundError:
            raise ProviderError(
                ErrorCode.FAILED_PRECONDITION, f"quota command not found: {argv[0]}"
            ) from None
        except subprocess.TimeoutExpired:
            raise ProviderError(
                ErrorCode.DEADLINE_EXCEEDED,
                f"quota command {argv[0]} did not finish within {self.timeout:g}s",
            ) from None
        if done.returncode != 0:
            raise ProviderError(
                ErrorCode.FAILED_PRECONDITION,
                f"quota command {argv[0]} for {scope} {subject} on {shown} "
                f"{exit_detail(done.returncode, done.stderr)}",
            )


def quota_command(params: Mapping[str, Any]) -> QuotaCommand | None:
    """The command backend from provider params, or None for the ``ledger`` backend."""
    backend = params.get("quota_backend", "ledger")
    if backend == "ledger":
        return None
    if backend != "command":
        raise _invalid(f"param quota_backend must be 'ledger' or 'command', got {backend!r}")
    template = params.get("quota_command")
    if (
        not isinstance(template, list)
        or not template
        or not all(isinstance(p, str) for p in template)
    ):
        raise _invalid("quota_backend 'command' needs quota_command: a list of argv strings")
    for part in template:
        try:
            fields = [name for _, name, _, _ in string.Formatter().parse(part)]
        except ValueError as err:  # a lone '{' or '}'; write '{{' for a literal brace
            raise _invalid(f"quota_command part {part!r} is not a template: {err}") from None
        for field_name in fields:
            if field_name is not None and field_name not in FIELDS:
                raise _invalid(
                    f"quota_command placeholder {{{field_name}}} is unknown; "
                    f"use {', '.join('{' + f + '}' for f in FIELDS)}"
                )
    timeout = params.get("quota_timeout", 60)
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
        raise _invalid("param quota_timeout must be a positive number of seconds")
    return QuotaCommand(template, float(timeout))
