"""The YAML files of a git revision, read straight from the object store.

No checkout and no working-tree access: blobs are read from the commit's tree, by the
folder loader's rule (``yaml_source.not_site_config``), so a policy review and ``xce-plan
--base`` read at a revision the files a compile reads on disk, in any clone that holds the
commit (a shallow CI clone too).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import git

from compiler.core.git import tree_at
from compiler.source.yaml_source import is_yaml_name, not_site_config


def yaml_blobs(commit: git.Commit, folder: str, skip: str | None = None) -> dict[str, bytes]:
    """Repository path -> bytes of every YAML file under ``folder``, by the folder loader's
    rule (``not_site_config``: hidden files and folders, virtualenvs, and the folder
    ``skip`` directly in it)."""
    tree = tree_at(commit, folder)
    if tree is None:
        return {}
    out = {str(blob.path): blob.data_stream.read() for blob in _yaml_in(tree, skip, top=True)}
    return dict(sorted(out.items()))


def _yaml_in(tree: git.Tree, skip: str | None, top: bool) -> Iterator[git.Blob]:
    """The YAML blobs below ``tree``, never entering a folder that is not site-config."""
    yield from (blob for blob in tree.blobs if is_yaml_name(blob.name))
    for sub in tree.trees:
        if not not_site_config(sub.name, top, _holds(sub), skip):
            yield from _yaml_in(sub, skip, top=False)


def _holds(tree: git.Tree) -> Callable[[str], bool]:
    return lambda name: f"{tree.path}/{name}" in tree
