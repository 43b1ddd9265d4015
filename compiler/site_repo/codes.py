"""The problem codes of ``xce-init`` (XCE020–XCE029, docs/errors.md "Files and YAML"), each
named once."""

from __future__ import annotations

USAGE = "XCE020"  # a command-line mistake of xce-init
NOT_EMPTY = "XCE021"  # the target folder exists and holds something: never overwritten
CANNOT_CREATE = "XCE022"  # the target is a file, or cannot be created or written
BAD_SITE_NAME = "XCE023"  # --site-name (or the folder's name) is not a valid site name
GIT_FAILED = "XCE024"  # git is missing, or git init / commit failed
SNAPSHOTS_FAILED = "XCE025"  # the first pytest --snapshot-update run failed
BAD_SITE_FOLDER = "XCE026"  # --site of --print-ci is no plain folder inside the repository
BAD_BRANCH = "XCE027"  # the branch a pipeline file would name is no plain branch name
