"""The drift report's renderings: bundled templates for text, markdown and HTML (HTML fit
for a mail client), JSON by a serializer; a site's own templates; a template that does not
render is one problem naming its file and line."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from syrupy.assertion import SnapshotAssertion

from compiler.core.problems import UserError
from reconciler.drift import codes
from reconciler.drift.model import Category, Finding
from reconciler.render.drift import FORMATS, Shown, Templates, site_templates
from tests.drift.reports import sample


def render(fmt: str, templates: Templates | None = None, report: object = None) -> str:
    return FORMATS.render(Shown(report or sample(), templates or Templates()), fmt)


def test_the_text_report_reads(snapshot: SnapshotAssertion) -> None:
    assert render("text") == snapshot


def test_the_markdown_report_reads(snapshot: SnapshotAssertion) -> None:
    assert render("markdown") == snapshot


def test_every_format_names_every_finding_and_how_long_it_stood() -> None:
    report = sample()
    for fmt in FORMATS.names:
        text = render(fmt)
        for f in report.findings:
            assert f.entry in text, (fmt, f.entry)
        if fmt != "json":
            assert "3 days" in text and "9 days" in text and "5 hours" in text, fmt
            assert "1 new, 1 changed, 1 resolved" in text, fmt


def test_json_is_the_report_whole() -> None:
    doc = orjson.loads(render("json"))
    report = sample()
    assert (doc["format"], doc["version"], doc["site"], doc["drift"]) == (
        "xce-drift", 1, "hpc-east", True)
    assert doc["counts"]["not-corrected"] == 2 and doc["counts"]["total"] == 8
    assert tuple(Finding.from_json(f) for f in doc["findings"]) == report.findings
    assert [c["after"]["fields"][0]["live"] for c in doc["since_last"]["changed"]] == ["0755"]


def test_html_suits_a_mail_client_and_escapes_what_it_shows() -> None:
    hostile = Finding(Category.MISSING, 'volume-dir/v/<script>alert("x")</script>', "volume-dir",
                      "fs", "<img src=http://evil.example/x.png>", "available", None)
    report = sample()
    shown = render("html", report=replace(report, findings=(*report.findings, hostile)))
    assert "<script" not in shown and "<img" not in shown
    assert "&lt;script&gt;" in shown and "&lt;img src=http://evil.example/x.png&gt;" in shown
    html = render("html")
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert not re.search(r"<script|<style|<link|\bsrc=|\bhref=|url\(|@import", html, re.I)
    assert html.count('style="') > 50  # styled inline, element by element
    for heading in ("host", "quota", "volume-dir", "counter"):  # a table per kind
        assert f">{heading} <span" in html
    assert "<th" in html and "Standing" in html and "Fix" in html


def test_markdown_tables_survive_pipes() -> None:
    odd = Finding(Category.DIFFERS, "host/a", "host", "ctl", "x", "available", "available",
                  fields=(), fix="echo a | b")
    text = render("markdown", report=replace(sample(), findings=(odd,)))
    (row,) = [line for line in text.splitlines() if line.startswith("| `host/a`")]
    assert "echo a \\| b" in row and row.count(" | ") == 7


def site_with(tmp_path: Path, name: str, text: str) -> Path:
    folder = tmp_path / "site" / "templates" / "drift"
    folder.mkdir(parents=True)
    (folder / name).write_text(text)
    return tmp_path / "site"


def test_a_site_overrides_a_template_and_may_extend_the_bundled_one(tmp_path: Path) -> None:
    site = site_with(tmp_path, "report.html.j2", '{% extends "bundled/report.html.j2" %}'
                     "{% block footer %}<p>Questions: hpc-admins@example.org</p>"
                     "{% endblock %}")
    (site / "templates" / "drift" / "report.txt.j2").write_text(
        "{{ report.site }}: {{ report.summary() }}\n")
    templates = site_templates(site, None)
    assert templates.folder == site / "templates" / "drift"
    html = render("html", templates)
    assert "hpc-admins@example.org" in html and "Made by xce-drift" not in html
    assert "volume-dir/shared/bob" in html  # the rest is the bundled report
    assert render("text", templates) == "hpc-east: 8 findings: 1 missing, 1 differs, 1 " \
        "extra, 1 orphan, 2 not-corrected, 1 co-managed, 1 unknown\n"
    assert render("markdown", templates).startswith("## Drift of site `hpc-east`")
    assert site_templates(tmp_path / "elsewhere", None).folder is None


def failure(templates: Templates, fmt: str = "text") -> str:
    with pytest.raises(UserError) as caught:
        render(fmt, templates)
    (problem,) = caught.value.problems
    where = problem.where.label() if problem.where else problem.subject
    return f"{problem.code} {where}: {problem.message}"


def test_a_template_that_does_not_parse_names_its_file_and_line(tmp_path: Path) -> None:
    site = site_with(tmp_path, "report.txt.j2", "Drift\n{% for f in report.findings %}\n"
                     "{{ f.entry }\n")
    templates = site_templates(site, None)
    message = failure(templates)
    path = site / "templates" / "drift" / "report.txt.j2"
    assert message.startswith(f"{codes.TEMPLATE_SYNTAX} {path}:3:1: template does not parse")
    with pytest.raises(UserError):  # before any provider is asked
        templates.check({"text"})
    templates.check({"html", "json"})  # the others are the bundled ones, and parse


def test_an_undefined_name_names_its_file_and_line(tmp_path: Path) -> None:
    site = site_with(tmp_path, "report.html.j2", "<p>{{ report.site }}</p>\n\n"
                     "<p>{{ report.no_such_field }}</p>\n")
    message = failure(site_templates(site, None), "html")
    path = site / "templates" / "drift" / "report.html.j2"
    assert message.startswith(f"{codes.TEMPLATE_FAILED} {path}:3:1: template failed")
    assert "no_such_field" in message


def test_a_failing_filter_and_a_missing_include_are_problems_too(tmp_path: Path) -> None:
    site = site_with(tmp_path, "report.txt.j2", "{{ report.site }}\n{{ report.site + 1 }}\n")
    assert ":2:1: template failed: TypeError" in failure(site_templates(site, None))
    (site / "templates" / "drift" / "report.md.j2").write_text('{% include "nope.j2" %}\n')
    assert "'nope.j2'" in failure(site_templates(site, None), "markdown")


def test_the_sandbox_keeps_a_template_from_python_internals(tmp_path: Path) -> None:
    site = site_with(tmp_path, "report.txt.j2", "{{ report.__class__.__mro__ }}\n")
    assert codes.TEMPLATE_FAILED in failure(site_templates(site, None))


def test_a_templates_folder_that_is_not_there_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError) as caught:
        site_templates(None, tmp_path / "missing")
    assert caught.value.problems[0].code == codes.TEMPLATES_UNREADABLE
