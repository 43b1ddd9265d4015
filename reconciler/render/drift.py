"""The drift report in text, markdown and HTML from jinja2 templates, and in JSON.

The bundled templates (``templates/report.{txt,md,html}.j2``, shipped as package data)
may be overridden per site: a file of the same name in the site's ``templates/drift/``
(or in ``--templates DIR``) is used instead, and may extend the bundled one
(``{% extends "bundled/report.html.j2" %}``) to replace only its ``intro`` or ``footer``.
Templates run sandboxed with ``StrictUndefined``, and HTML is autoescaped. A template that
does not parse or fails while rendering is one problem naming its file and line, never
a traceback. JSON is a serializer, not a template: it is the machine-readable contract,
and a template could emit invalid JSON or leave a field out.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TypeVar

import jinja2
import orjson
from jinja2.sandbox import SandboxedEnvironment

from compiler.cli.formats import Formats
from compiler.core.problems import UserError, Where
from compiler.core.text_limits import shorten
from compiler.core.textstyle import Style
from compiler.core.times import format_utc
from reconciler.drift import codes
from reconciler.drift.fold import fold
from reconciler.drift.model import Category, DriftReport
from reconciler.drift.site_loader import SiteLoader
from reconciler.render.common import value

SITE_TEMPLATES = Path("templates") / "drift"  # inside the site folder
TEMPLATE_OF = {"text": "report.txt.j2", "markdown": "report.md.j2", "html": "report.html.j2"}
_SUFFIX = ".j2"


def _when(at: datetime | None) -> str:
    return "" if at is None else format_utc(at, "minutes")


def _cell(text: object) -> str:
    """A markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


_FILTERS: dict[str, Callable[..., str]] = {"value": value, "when": _when, "cell": _cell,
                                            "shorten": shorten}


@dataclass(frozen=True, slots=True)
class Templates:
    """Where templates are looked up: ``folder`` first (a site's override), then the bundle."""

    folder: Path | None = None

    def environment(self) -> jinja2.Environment:
        """Names resolve in the site's folder first, then in the bundle; ``bundled/NAME``
        is always the bundled one, so a site's template may extend it and replace blocks."""
        bundled = jinja2.PackageLoader("reconciler.render", "templates")
        loaders: list[jinja2.BaseLoader] = [bundled, jinja2.PrefixLoader({"bundled": bundled})]
        if self.folder is not None:
            loaders.insert(0, SiteLoader(self.folder))
        env = SandboxedEnvironment(
            loader=jinja2.ChoiceLoader(loaders), undefined=jinja2.StrictUndefined,
            autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",)),
            trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
        env.filters.update(_FILTERS)
        return env

    def check(self, formats: Iterable[str]) -> None:
        """Parse the templates of these formats now: a syntax error stops the run before
        any provider is asked (a template included by one is parsed when it renders)."""
        env = self.environment()
        for name in sorted(TEMPLATE_OF[f] for f in formats if f in TEMPLATE_OF):
            _guarded(name, functools.partial(env.get_template, name))

    def render(self, name: str, report: DriftReport) -> str:
        env = self.environment()
        return _guarded(name, lambda: env.get_template(name).render(
            report=report, counts=report.counts(), Category=Category,
            categories=tuple(Category), fold=fold))


T = TypeVar("T")


def _guarded(name: str, step: Callable[[], T]) -> T:
    """``step`` (loading or rendering template ``name``); a template's failure is a problem
    naming its file and line."""
    try:
        return step()
    except jinja2.TemplateSyntaxError as err:
        where = Where(err.filename or name, line=err.lineno)
        raise UserError([codes.problem(codes.TEMPLATE_SYNTAX,
                                       f"template does not parse: {err.message}",
                                       where=where)]) from None
    except jinja2.TemplateNotFound as err:
        raise UserError([codes.problem(
            codes.TEMPLATE_FAILED, f"template {err.name!r} (included by a template) is "
            "neither in the site's templates nor bundled", subject=name)]) from None
    except Exception as err:
        raise _failed(name, err) from None


def _failed(name: str, err: Exception) -> Exception:
    """A template's own failure (an undefined name, a filter on a wrong value) as a problem
    at the template line; anything else is a bug of ours and goes on as it is."""
    place = _template_frame(err.__traceback__)
    if place is None:
        return err
    file, line = place
    message = str(err) if isinstance(err, jinja2.TemplateError) else f"{type(err).__name__}: {err}"
    return UserError([codes.problem(codes.TEMPLATE_FAILED, f"template failed: {message}",
                                    where=Where(file, line=line))])


def _template_frame(tb: TracebackType | None) -> tuple[str, int] | None:
    """The innermost traceback frame inside a template (jinja2 gives those frames the
    template's file name and line)."""
    found: tuple[str, int] | None = None
    while tb is not None:
        file = tb.tb_frame.f_code.co_filename
        if file.endswith(_SUFFIX):
            found = (file, tb.tb_lineno)
        tb = tb.tb_next
    return found


def site_templates(site: Path | None, given: Path | None) -> Templates:
    """``--templates DIR`` if given (it must be a readable folder), else the site's
    ``templates/drift/`` when it exists, else the bundled templates alone."""
    if given is not None:
        if not given.is_dir():
            raise UserError([codes.problem(codes.TEMPLATES_UNREADABLE,
                                           "the templates folder does not exist or is not a "
                                           "folder", subject=str(given))])
        return Templates(given)
    folder = None if site is None else site / SITE_TEMPLATES
    return Templates(folder if folder is not None and folder.is_dir() else None)


@dataclass(frozen=True, slots=True)
class Shown:
    """A report and the templates it is rendered with."""

    report: DriftReport
    templates: Templates = Templates()


def to_json(report: DriftReport) -> str:
    return orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS
                        | orjson.OPT_APPEND_NEWLINE).decode()


def _templated(fmt: str) -> Callable[[Shown], str]:
    return lambda shown: shown.templates.render(TEMPLATE_OF[fmt], shown.report)


def _text(shown: Shown, style: Style | None) -> str:
    return _templated("text")(shown)


FORMATS: Formats[Shown] = Formats("drift report", _text, json=lambda s: to_json(s.report),
                                  markdown=_templated("markdown"), html=_templated("html"))
SUFFIXES = {".txt": "text", ".text": "text", ".json": "json", ".md": "markdown",
            ".html": "html", ".htm": "html"}


def format_of(path: Path) -> str | None:
    """The format a file written with ``--out`` gets from its suffix (None: unknown)."""
    return SUFFIXES.get(path.suffix.lower())

