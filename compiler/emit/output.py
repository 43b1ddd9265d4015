"""Writing the build outputs atomically, with a manifest of their digests; which files they are."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from compiler import __version__
from compiler.contract.build_files import COMPILED_FILES, MANIFEST
from compiler.core.canonical import digest, dumps
from compiler.core.file_io import check_replaceable, write_atomic
from compiler.core.git import Revision
from compiler.model.document import LANGUAGE_VERSION

MANIFEST_SCHEMA = 1


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
    for name in (*documents, MANIFEST):  # each target, before any is written
        check_replaceable(out_dir / name)
    for name, data in sorted(documents.items()):
        write_atomic(out_dir / name, data)
        manifest["outputs"][name] = digest(data)
    write_atomic(out_dir / MANIFEST, dumps(manifest))
    return manifest


def compiler_output(path: Path, build_dirs: tuple[Path, ...] = ()) -> str | None:
    """Why ``path`` is xce-compile's (it wrote it, or writes it on its next run), or None:
    the manifest beside it lists it or is it, or it bears a compiled file's name in a folder
    holding a manifest or in one of ``build_dirs`` (where xce-compile writes)."""
    manifest = path.parent / MANIFEST
    listed = _listed(manifest)
    if listed is not None and path.name in listed:
        return f"{manifest} lists it"
    if path.name not in (*COMPILED_FILES, MANIFEST):
        return None
    if listed is not None or any(path.parent.resolve() == d.resolve() for d in build_dirs):
        return f"xce-compile writes {path.name} into {path.parent}"
    return None


def _listed(manifest: Path) -> frozenset[str] | None:
    """The files a compiler manifest lists, itself included; None when it is not one."""
    try:
        doc = orjson.loads(manifest.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(doc, dict) or "compiler" not in doc or not isinstance(
            doc.get("outputs"), dict):
        return None
    return frozenset((*doc["outputs"], MANIFEST))
