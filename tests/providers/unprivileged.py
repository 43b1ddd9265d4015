"""Run the directory provider as an ordinary user, as the example site does on a laptop.

``python unprivileged.py REPO WORKDIR`` imports everything first, then (when started as
root) hands WORKDIR to ``nobody`` and drops to that user for good, creates a volume and
two user directories through the protocol, evicts two job directories (one it may not
read) as a plan would, and prints the replies and the inventory as JSON.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any


def main() -> None:
    repo, workdir = sys.argv[1], Path(sys.argv[2])
    sys.path.insert(0, repo)
    from reconciler.protocol import Request
    from reconciler.providers.registry import open_provider

    t = open_provider("shared-fs", {"kind": "directory", "params": {}}, workdir)
    if os.geteuid() == 0:  # every module is loaded: nothing needs root's files any more
        for path in [workdir, *workdir.rglob("*")]:  # the user's own work folder
            os.chown(path, 65534, 65534)
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
    replies = {}
    entries: list[dict[str, Any]] = [
        {"id": "volume/shared", "spec": {"path": "/shared", "mode": "0751"}},
        {"id": "volume-dir/shared/root", "spec": {"owner": "root"}},  # resolves, not ours
        {"id": "volume-dir/shared/zed-nouser"},  # does not resolve
    ]
    for i, entry in enumerate(entries):
        reply = t.call(Request("create", op_id=f"op{i}", epoch=1, owner="site/test",
                               params={"entry": entry}))
        replies[entry["id"]] = reply.to_json()
    make_jobs(workdir / "fs" / "shared" / "zed-nouser")
    inventory = t.call(Request("inventory")).to_json()
    evicts = {}
    for entry in inventory["result"]["entries"]:
        if entry["kind"] == "job-dir":
            evicts[entry["id"]] = t.call(Request("delete", op_id=f"evict-{entry['id']}", epoch=1,
                                                 owner="site/test", params={
                "id": entry["id"], "entry": entry, "action": "evict", "destroy": True,
            })).to_json()
    t.close()
    json.dump({"uid": os.geteuid(), "replies": replies, "inventory": inventory,
               "evicts": evicts}, sys.stdout)


def make_jobs(user_dir: Path) -> None:
    """An expired job, and one its owner made unreadable (0000): this user cannot look in."""
    for job in ("1", "2"):
        (user_dir / job / "out").mkdir(parents=True)
        (user_dir / job / "out" / "log").write_text("done\n")
    (user_dir / "2").chmod(0)


if __name__ == "__main__":
    main()
