"""An exec provider for ``bench_proxy.py``: one provider of a big site, answering from files.

Run by the exec transport as ``python3 benchmarks/snapshot_provider.py DIR NAME``: ``info``
answers ``DIR/NAME.info.json``, ``inventory`` streams ``DIR/NAME.json`` (an inventory
result, written by ``bench_proxy.py`` from a live snapshot), any other verb is refused.
Only the standard library, so a process starts in tens of milliseconds and the figures are
the plan's, not this double's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> int:
    folder, name = Path(sys.argv[1]), sys.argv[2]
    verb = json.loads(sys.stdin.read() or "{}").get("verb")
    out = sys.stdout.buffer
    if verb == "inventory":
        out.write(b'{"ok": true, "result": ')
        with (folder / f"{name}.json").open("rb") as source:
            while chunk := source.read(1 << 20):
                out.write(chunk)
        out.write(b"}\n")
    elif verb == "info":
        info = (folder / f"{name}.info.json").read_bytes()
        out.write(b'{"ok": true, "result": ' + info + b"}\n")
    else:
        error = {"code": "UNIMPLEMENTED", "message": f"a snapshot has no {verb}",
                 "retryable": False}
        out.write(json.dumps({"ok": False, "error": error}).encode() + b"\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
