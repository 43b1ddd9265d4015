"""Standard output and error as every command writes them: never a traceback of their own.

A command's output can fail in ways no command body should handle: stdout closed
(``xce-plan >&-``: Python has no ``sys.stdout`` at all), full (``> /dev/full``), a pipe
whose reader left (``| head -1``), or an encoding that cannot hold a character
(``PYTHONIOENCODING=ascii``, ``LC_ALL=C`` without Python's UTF-8 mode). ``guarded``
wraps both streams for the length of a run: a character the encoding lacks is written as
its ``\\uXXXX`` escape (valid inside a JSON string, readable as text), and a failing write
or flush raises ``OutputFailed``, naming the stream, for ``compiler.cli.runner`` to report
as one line (or, for a pipe whose reader left, to end quietly).
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import os
import sys
from collections.abc import Iterator
from typing import Any, TextIO, cast

_ESCAPE = "xce-escape"


def _escape(err: UnicodeError) -> tuple[str, int]:
    """The characters an encoding lacks as JSON-style escapes (UTF-16 pairs above U+FFFF)."""
    if not isinstance(err, UnicodeEncodeError):
        raise err
    units = err.object[err.start:err.end].encode("utf-16-be", "surrogatepass")
    pairs = (int.from_bytes(units[i:i + 2], "big") for i in range(0, len(units), 2))
    return "".join(f"\\u{unit:04x}" for unit in pairs), err.end


codecs.register_error(_ESCAPE, _escape)


class OutputFailed(Exception):
    """A write to standard output or error failed; ``stream`` says which, ``error`` why."""

    def __init__(self, stream: str, error: OSError) -> None:
        super().__init__(f"cannot write to {stream}: {error.strerror or error}")
        self.stream = stream
        self.error = error

    @property
    def reader_left(self) -> bool:
        """The reader of a pipe went away (``| head``): nothing is wrong to report."""
        return self.error.errno == errno.EPIPE


class GuardedStream:
    """A text stream whose writes cannot fail with an encoding error, and whose failures
    are ``OutputFailed``; everything else (``isatty``, ``fileno``, ``encoding``) is the
    stream's own."""

    def __init__(self, stream: TextIO, name: str) -> None:
        self._stream = stream
        self._name = name
        encoding = getattr(stream, "encoding", None) or "utf-8"
        self._utf8 = codecs.lookup(encoding).name == "utf-8"
        self._encoding = encoding

    def write(self, text: str) -> int:
        if not self._utf8 and not text.isascii():
            text = text.encode(self._encoding, _ESCAPE).decode(self._encoding)
        try:
            return self._stream.write(text)
        except UnicodeEncodeError:  # a lone surrogate, even in UTF-8
            return self.write(text.encode("utf-8", _ESCAPE).decode("utf-8"))
        except OSError as err:
            raise self._failed(err) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as err:
            raise self._failed(err) from None

    def _failed(self, err: OSError) -> OutputFailed:
        """The stream is lost: what it still buffers goes nowhere (``discard``)."""
        discard(self._stream)
        return OutputFailed(self._name, err)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def discard(stream: TextIO) -> None:
    """Point a failed stream's descriptor at /dev/null, so that the interpreter's last
    flush of what is still buffered succeeds instead of printing "Exception ignored"."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        fd = stream.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)


@contextlib.contextmanager
def guarded() -> Iterator[bool]:
    """Both streams guarded while the block runs; yields False, guarding nothing, when
    standard output is closed (there is no ``sys.stdout`` to write the command's result
    to, and its descriptor would be the next file the command opens)."""
    out, err = sys.stdout, sys.stderr
    if out is None:
        yield False
        return
    sys.stdout = cast(TextIO, GuardedStream(out, "standard output"))
    sys.stderr = cast(TextIO, GuardedStream(err, "standard error")) if err is not None \
        else open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - closed below
    try:
        yield True
    finally:
        if err is None:
            sys.stderr.close()
        sys.stdout, sys.stderr = out, err
