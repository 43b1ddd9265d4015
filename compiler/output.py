"""Writing the build outputs atomically, with a manifest of their digests."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from compiler import __version__
from compiler.canonical import digest, dumps
from compiler.model.document import LANGUAGE_VERSION
from compiler.revision import Revision

MANIFEST_SCHEMA = 1


def write_atomic(path: Path, data: bytes) -> None:
    """Write via a temporary file and rename, so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            os.fchmod(fh.fileno(), 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_outputs(
    out_dir: Path,
    documents: Mapping[str, bytes],
    revision: Revision,
    site: str,
    desired_digest: str,
    policies: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Write every output, then the manifest naming each one's digest (no timestamps), and
    which policy data made the allowlists (``PolicyBuild.provenance``)."""
    manifest: dict[str, Any] = {
        "schema": MANIFEST_SCHEMA,
        "compiler": __version__,
        "language": LANGUAGE_VERSION,
        "site": site,
        "revision": revision.commit,
        "dirty": revision.dirty,
        "desired_digest": desired_digest,
        **({"policies": dict(policies)} if policies is not None else {}),
        "outputs": {},
    }
    for name, data in sorted(documents.items()):
        write_atomic(out_dir / name, data)
        manifest["outputs"][name] = digest(data)
    write_atomic(out_dir / "manifest.json", dumps(manifest))
    return manifest
