"""How the reconciler talks to a provider: in-process, one process per call, or JSON lines.

Every transport has the same shape (``Transport``), so callers never care where a
provider runs; failures of the channel itself come back as replies naming the provider.
"""

from reconciler.transports.base import Transport
from reconciler.transports.builtin import BuiltinTransport, Handler
from reconciler.transports.exec_once import ExecTransport
from reconciler.transports.jsonl import JsonLinesTransport

__all__ = ["BuiltinTransport", "ExecTransport", "Handler", "JsonLinesTransport", "Transport"]
