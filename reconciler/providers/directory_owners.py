"""Who owns a volume root or a user directory: give it to its owner, or record why not.

A root-owned volume top (N12) and user directories owned by their users need root and
names that resolve here. The example site runs anywhere — as an ordinary user, with
users that exist only in its config — so where the provider cannot ``chown`` it leaves
the directory as it is, records the intended owner and reports that owner with
``owner_applied: false``: the plan then shows no drift it could not fix anyway. As soon
as the change becomes possible (running as root, the name resolves), the inventory
reports the real owner again, so the next plan gives the directory to its owner.
"""

from __future__ import annotations

import grp
import os
import pwd

Ids = tuple[int, int]


def owner_ids(owner: str, group: str | None = None) -> Ids | str:
    """The uid and gid (``group``'s, else the user's primary group), or why there are none."""
    try:
        pw = pwd.getpwnam(owner)
    except KeyError:
        return f"user {owner!r} does not resolve to a uid on this host"
    if group is None:
        return pw.pw_uid, pw.pw_gid
    try:
        return pw.pw_uid, grp.getgrnam(group).gr_gid
    except KeyError:
        return f"group {group!r} does not resolve to a gid on this host"


def give(fd: int, owner: str, group: str | None = None) -> str | None:
    """``fchown`` the open directory to ``owner`` (and ``group``); None when done, else why not."""
    ids = owner_ids(owner, group)
    if isinstance(ids, str):
        return ids
    try:
        os.fchown(fd, *ids)
    except PermissionError:
        return f"the provider runs as uid {os.geteuid()}, which may not give it to {owner!r}"
    return None


def not_applied(shown: str, left_with: str, why: str) -> str:
    """The warning a create/update reply carries when the owner could not be applied."""
    return (f"{why}: {shown} is left owned by {left_with}; the intended owner is recorded "
            "(owner_applied: false)")


class Names:
    """Name lookups for one inventory, each done once (NSS/LDAP lookups are slow)."""

    def __init__(self) -> None:
        self._users: dict[int, str] = {}
        self._groups: dict[int, str] = {}
        self._blocked: dict[tuple[str, str | None], bool] = {}
        self._uid = os.geteuid()
        self._gids = {os.getegid(), *os.getgroups()}

    def user(self, uid: int) -> str:
        if uid not in self._users:
            try:
                self._users[uid] = pwd.getpwuid(uid).pw_name
            except KeyError:
                self._users[uid] = str(uid)
        return self._users[uid]

    def group(self, gid: int) -> str:
        if gid not in self._groups:
            try:
                self._groups[gid] = grp.getgrgid(gid).gr_name
            except KeyError:
                self._groups[gid] = str(gid)
        return self._groups[gid]

    def still_pending(self, st: os.stat_result, owner: str, group: str | None = None) -> bool:
        """Whether a recorded owner still cannot be applied to a directory we hold.

        Someone who ``chown``ed it by hand since, or a provider that now could apply it,
        sees the directory's real owner instead.
        """
        if st.st_uid != self._uid:
            return False
        key = (owner, group)
        if key not in self._blocked:
            self._blocked[key] = not self._may_give(owner_ids(owner, group))
        return self._blocked[key]

    def _may_give(self, ids: Ids | str) -> bool:
        """Root may give a directory to anyone; others only to themselves and their groups."""
        if isinstance(ids, str):
            return False
        return self._uid == 0 or (ids[0] == self._uid and ids[1] in self._gids)
