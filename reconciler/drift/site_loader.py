"""A site's own drift templates, read as every input is (``compiler.core.file_io.read_input``).

jinja2's ``FileSystemLoader`` opens whatever a name leads to: a link to ``/proc/kmsg``
waits for ever, and a FIFO or device named like a template is skipped, so the bundled
template renders instead without a word. Here a file that exists under a template's name
must be a readable regular text file of at most ``SITE_FILE_CAP``, or the run stops with a
problem naming it (XCE853).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable
from typing import Any

import jinja2
from jinja2.loaders import split_template_path

from compiler.core.file_io import SITE_FILE_CAP, read_input
from compiler.core.problems import UserError
from reconciler.drift import codes


def _unreadable(filename: str, why: str) -> UserError:
    return UserError([codes.problem(codes.TEMPLATES_UNREADABLE, f"template {why}",
                                    subject=filename)])


def _text(filename: str) -> str:
    try:
        return read_input(filename, SITE_FILE_CAP).decode("utf-8")
    except OSError as err:
        raise _unreadable(filename, f"cannot be read: {err.strerror}") from None
    except UnicodeDecodeError:
        raise _unreadable(filename, "is not UTF-8 text") from None


class SiteLoader(jinja2.FileSystemLoader):
    """Templates from a site's folder; a name that is not there falls to the next loader."""

    def get_source(self, environment: Any, template: str) -> tuple[str, str, Callable[[], bool]]:
        pieces = split_template_path(template)
        for searchpath in self.searchpath:
            filename = posixpath.join(searchpath, *pieces)
            if os.path.lexists(filename):  # a dangling link, a FIFO, a device: said, not skipped
                return _text(filename), os.path.normpath(filename), lambda: False
        raise jinja2.TemplateNotFound(template)
