"""Host name patterns (``site.discovery.names``): Slurm hostlists or ``*``/``?`` globs.

One pattern is one of two forms, told apart by its characters, so that ``[`` never means
two things: a pattern with ``*`` or ``?`` is an fnmatch glob over host-name characters
(``burst*``, ``gpu-??``; no brackets), any other is a hostlist (``cn[0001-0100]``, a plain
name is a hostlist of one), read by compiler/core/hostlist.py with its padding rule. The
compiler and the planner (for a saved map) check patterns with ``pattern_problem``; the
planner matches with ``name_matcher``, built once per set of patterns and O(1)-ish per name.
A host-name glob matches as every glob does (``compiler.core.globs.glob_matcher``); what is
its own is what it may hold (``pattern_problem``: host-name characters, no sets), since a
bracket here always starts a hostlist range.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable

from ClusterShell.NodeSet import NodeSetException

from compiler.core.globs import glob_matcher
from compiler.core.hostlist import HostlistError, nodeset, parse

GLOB_CHARS = frozenset("*?")
_HOST_NAME = re.compile(r"[A-Za-z0-9._-]+")
_GLOB_BODY = re.compile(r"[A-Za-z0-9._*?-]+")


def is_glob(pattern: str) -> bool:
    return not GLOB_CHARS.isdisjoint(pattern)


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` is neither a hostlist nor a host-name glob, or None when it is one."""
    if is_glob(pattern):
        if "[" in pattern or "]" in pattern:
            return ("it mixes a glob ('*', '?') with a hostlist range ('[…]'): write the "
                    "range as a hostlist of its own, or the glob without brackets")
        if not _GLOB_BODY.fullmatch(pattern):
            return "a glob may hold only host-name characters (letters, digits, '.', '_', '-'), " \
                   "'*' and '?'"
        return None
    try:
        parse(pattern)
    except HostlistError as err:
        return f"not a hostlist: {err.message} (at character {err.offset + 1})"
    return None


def split_patterns(patterns: Iterable[str]) -> tuple[list[str], list[str]]:
    """(globs, hostlists), each in the order written."""
    globs: list[str] = []
    hostlists: list[str] = []
    for p in patterns:
        (globs if is_glob(p) else hostlists).append(p)
    return globs, hostlists


@functools.lru_cache(maxsize=16)
def name_matcher(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """A test of a host name against valid ``patterns`` (checked by ``pattern_problem``):
    one regex for the globs, one node set for the hostlists (membership without expanding
    them, so cn[000001-100000] costs nothing until a name is looked up)."""
    globs, hostlists = split_patterns(patterns)
    glob_re = glob_matcher(globs)
    nodes = nodeset(",".join(hostlists)) if hostlists else None

    def matches(name: str) -> bool:
        if glob_re is not None and glob_re.match(name):
            return True
        if nodes is None or not _HOST_NAME.fullmatch(name):
            return False  # a bracket or comma in a reported name is no node set to look up
        try:
            return name in nodes
        except NodeSetException:
            return False

    return matches
