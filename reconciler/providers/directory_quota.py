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
import subprocess
from collections.abc import Sequence

from compiler.contract.provider_params import DirectoryParams
from reconciler.protocol import ErrorCode, ProviderError
from reconciler.transports.process import exit_detail


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


def quota_command(params: DirectoryParams) -> QuotaCommand | None:
    """The command backend from provider params, or None for the ``ledger`` backend (the
    model checked the template's placeholders and that ``command`` has one)."""
    if params.quota_backend == "ledger" or params.quota_command is None:
        return None
    return QuotaCommand(params.quota_command, float(params.quota_timeout))
