"""The ``exec`` transport: one process per request, JSON request on stdin, reply on stdout.

Simple to write a provider for in any language, and nothing survives between calls, so
a provider that hangs is killed with its whole process group at the deadline.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from reconciler.protocol import ErrorCode, ProviderError, Reply, Request
from reconciler.transports.base import (
    channel_error,
    decode_document,
    decode_reply,
    encode_request,
)
from reconciler.transports.process import exit_detail, kill_tree, spawn


class ExecTransport:
    def __init__(
        self, name: str, command: Sequence[str], timeout: float = 30.0, cwd: Path | None = None
    ) -> None:
        self.name = name
        self.command = tuple(command)
        self.timeout = timeout
        self.cwd = cwd  # the provider's state folder, where it may keep what it needs

    def call(self, request: Request) -> Reply:
        try:
            return self._call(request)
        except ProviderError as err:
            return Reply.failure(err)

    def _call(self, request: Request) -> Reply:
        proc = spawn(self.name, self.command, subprocess.PIPE, self.cwd)
        try:
            out, err = proc.communicate(encode_request(request) + b"\n", timeout=self.timeout)
        except subprocess.TimeoutExpired:
            kill_tree(proc)
            return channel_error(
                self.name,
                ErrorCode.DEADLINE_EXCEEDED,
                f"did not answer within {self.timeout:g}s (killed)",
            )
        finally:
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        how = exit_detail(proc.returncode, err)
        if not out.strip():
            code = ErrorCode.UNAVAILABLE if proc.returncode else ErrorCode.INTERNAL
            return channel_error(self.name, code, f"gave no reply ({how})")
        try:
            return decode_reply(self.name, decode_document(self.name, out))
        except ProviderError:
            if proc.returncode:
                return channel_error(self.name, ErrorCode.UNAVAILABLE, f"failed ({how})")
            raise

    def close(self) -> None:
        """Nothing to release: each call's process has already ended."""
