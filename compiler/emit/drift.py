"""``build/drift.json``: the site's drift sections written as one ``CompiledDrift``.

Each rule and waiver carries the place it is written, ``file:line:column`` with the file
relative to the site folder, so the report can name it and drift.json is the same wherever
the site is compiled from. The sections were checked across files before
(``compiler.checks.drift``); the first ``notify`` is the one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from compiler.contract.drift import CompiledDrift, CompiledIgnore, CompiledWaiver
from compiler.core.problems import Where
from compiler.model.document import SiteDocument
from compiler.source.yaml_source import Locator, SourceFile


def _placer(files: Sequence[SourceFile], site: Path | None) -> Callable[[Where], str]:
    """``file:line:column`` of a rule, the file relative to the site folder (so drift.json
    is the same wherever the site is compiled from), else as problems show it."""
    locator = Locator(files)
    paths = {f.path: f.abspath for f in files}
    root = None if site is None else site.resolve()

    def place(where: Where) -> str:
        at = locator.locate(where)
        path = paths.get(at.file)
        if root is not None and path is not None and path.resolve().is_relative_to(root):
            at = replace(at, file=path.resolve().relative_to(root).as_posix())
        return at.label()

    return place


def emit_drift(doc: SiteDocument, files: Sequence[SourceFile],
               site: Path | None = None) -> CompiledDrift:
    """Every file's rules and waivers in the order of the files, each with its place."""
    parts = doc.drift
    located = _placer(files, site)
    return CompiledDrift(
        ignore=[CompiledIgnore(**r.item.model_dump(), where=located(r.where))
                for r in parts.ignore],
        waivers=[CompiledWaiver(**w.item.model_dump(), where=located(w.where))
                 for w in parts.waivers],
        notify=parts.notify[0].item if parts.notify else None,
    )
