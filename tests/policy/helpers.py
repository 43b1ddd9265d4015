"""Shared test helpers: compile a policies folder + site folder the way the CLI does."""

from __future__ import annotations

import datetime
import shutil
from pathlib import Path
from typing import Any

from compiler.core.problems import Problem, Problems
from compiler.policy import compile_policies
from compiler.policy.site import load_site_policy_files
from compiler.source.yaml_source import Locator, SourceFile

ROOT = Path(__file__).resolve().parents[2]
POLICIES = ROOT / "policies"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
TODAY = datetime.date(2026, 11, 1)


def load_site(site_dir: Path, problems: Problems) -> list[SourceFile]:
    return load_site_policy_files(site_dir, problems) if site_dir.is_dir() else []


def compile_tree(
    policies: Path, site: Path | None, today: datetime.date = TODAY
) -> tuple[dict[str, Any], list[Problem]]:
    """Compile and locate every problem (file:line), as ``xce-policy compile`` does."""
    problems = Problems()
    site_files = load_site(site, problems) if site is not None else []
    build = compile_policies(policies, site_files, problems, today)
    return build.document, Locator([*build.sources, *site_files]).locate_all(problems)


def copy_policies(dest: Path) -> Path:
    shutil.copytree(POLICIES, dest)
    return dest


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def opcode_names(doc: dict[str, Any], role: str) -> list[str]:
    return [o["name"] for o in doc["roles"][role]["opcodes"]]


# A site-policy file with one waiver of the admin-only guardrail; ``{expires}`` to format.
WAIVER_SITE = """version: 1
policy:
  allow:
    - role: proxy
      opcodes: [config.reload]
  waivers:
    - name: proxy-admin-reload
      guardrail: admin-only-admin-cli
      role: proxy
      opcodes: [config.reload]
      reason: "reload after a credential rotation"
      expires: {expires}
"""
