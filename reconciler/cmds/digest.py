"""``xce-digest PATH…``: the dataset digest that site-config's ``digest:`` must carry.

The same function the dataset-copy provider verifies a staged copy with, so what an
admin writes is exactly what staging checks.
"""

from __future__ import annotations

import sys
from pathlib import Path

from compiler.cli.runner import EXIT_ERROR, EXIT_OK, UsageParser, run_cli
from reconciler.providers.dataset_digest import DatasetError, dataset_digest


def _body(argv: list[str] | None) -> int:
    p = UsageParser(prog="xce-digest",
                    description="Print the sha256 digest of a dataset file or folder.")
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH",
                   help="a dataset file or folder (symbolic links, FIFOs and devices are "
                   "refused)")
    args = p.parse_args(argv)
    status = EXIT_OK
    for path in args.paths:
        try:
            digest = dataset_digest(path)
        except DatasetError as err:  # a link, FIFO, device…: never opened to wait on
            sys.stderr.write(f"xce-digest: {err}\n")
            status = EXIT_ERROR
            continue
        except OSError as err:  # e.g. an I/O error while reading
            sys.stderr.write(f"xce-digest: {path}: {err.strerror or err}\n")
            status = EXIT_ERROR
            continue
        sys.stdout.write(f"{digest}  {path}\n")
    return status


def main(argv: list[str] | None = None) -> int:
    return run_cli("xce-digest", lambda: _body(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
