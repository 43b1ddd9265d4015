"""The proxy's log: one structured line on stderr per event, never a secret.

Events: each call made or refused, each lease taken, lost or released, each inventory
published, the configuration followed, the store lost and found. A line is a JSON object
(``--log-format json``, the default: for journald and log shippers) or ``key=value`` text;
either way it passes through the ``Redactor`` of every secret the served providers are bound
to, so a provider echoing its token in an error never puts it in the log.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Literal, TextIO

import orjson

from compiler.core.secrets import Redactor
from compiler.core.times import format_utc

LogFormat = Literal["json", "text"]
LOG_FORMATS: tuple[LogFormat, ...] = ("json", "text")

_WRITING = threading.Lock()


class EventLog:
    """Writes one line per event; ``redactor`` is replaced when the configuration changes."""

    def __init__(self, proxy: str, fmt: LogFormat = "json", stream: TextIO | None = None,
                 redactor: Redactor | None = None) -> None:
        self.proxy = proxy
        self.fmt = fmt
        self.stream = stream
        self.redactor = redactor or Redactor()

    def event(self, event: str, **fields: Any) -> None:
        """Log ``event`` with ``fields`` (plain JSON values)."""
        doc = {"ts": format_utc(time.time()), "event": event, "proxy": self.proxy,
               **self.redactor.value("", fields)}
        line = self.redactor.text(self._line(doc))
        stream = self.stream or sys.stderr
        with _WRITING:  # a batch's calls are logged from several threads: whole lines only
            stream.write(line + "\n")
            stream.flush()

    def _line(self, doc: dict[str, Any]) -> str:
        if self.fmt == "json":
            return orjson.dumps(doc).decode()
        return " ".join(f"{key}={_text(value)}" for key, value in doc.items())


def _text(value: Any) -> str:
    """A value in a text line: bare when it is one word, else as JSON."""
    if isinstance(value, str) and value and not any(c.isspace() or c in '"=' for c in value):
        return value
    return orjson.dumps(value).decode()
