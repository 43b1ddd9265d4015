"""pytest plugin for a site's own repository: snapshot-tested policy reviews (issue 10 §3).

Installed with xce-gitops (entry point ``pytest11: xce_gitops``), so every pytest run in an
environment that has the package loads it: it only adds the ``--xce-site`` option, the
``xce_site`` ini setting and fixtures, and imports the compiler only when a test asks for one
of them. The site is compiled once per session; a site that does not compile fails each test
that uses it with the compiler's own messages (file:line:column), never a traceback.
docs/site-repository.md describes the fixtures and the snapshot workflow.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from compiler.site_repo.review_data import SiteBuild

INI_SITE = "xce_site"
SYRUPY_UPDATE = "update_snapshots"  # the dest of syrupy's --snapshot-update
NOT_COMPILED = pytest.StashKey[str]()  # why the site did not compile, on --snapshot-update
BROKEN = pytest.StashKey[str]()  # why the site did not compile, on any run


class XceSiteWarning(UserWarning):
    """A warning the compiler reports for the site (a waiver about to expire, a volume no
    group mounts): shown in pytest's warnings summary, as xce-compile prints it."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("xce-gitops", "xce-gitops site-config fixtures")
    group.addoption(
        "--xce-site",
        dest="xce_site",
        metavar="DIR",
        help="the site-config folder the xce_* fixtures compile (default: the xce_site ini "
        "setting, else pytest's rootdir)",
    )
    parser.addini(
        INI_SITE,
        "the site-config folder the xce_* fixtures compile, relative to the ini file "
        "(default: pytest's rootdir)",
    )


@pytest.fixture(scope="session")
def xce_site_dir(pytestconfig: pytest.Config) -> Path:
    """The site folder: ``--xce-site`` (relative to where pytest runs), else the ``xce_site``
    ini setting (relative to the ini file's folder), else pytest's rootdir."""
    option = pytestconfig.getoption("xce_site")
    if option:
        return pytestconfig.invocation_params.dir / str(option)
    value = pytestconfig.getini(INI_SITE)
    if value:
        base = pytestconfig.inipath.parent if pytestconfig.inipath else pytestconfig.rootpath
        return base / str(value)
    return pytestconfig.rootpath


@pytest.fixture(scope="session")
def xce_build(pytestconfig: pytest.Config, xce_site_dir: Path) -> SiteBuild:
    """The site compiled with its policies, once per session (``compiled.supply_map``,
    ``compiled.bindings``, ``allowlists``): for a site's own assertions."""
    from compiler.cli.problem_render import render_text
    from compiler.core.problems import UserError
    from compiler.site_repo.review_data import build_site

    try:
        build = build_site(xce_site_dir)
    except UserError as err:
        failure = f"the site-config {xce_site_dir} does not compile:\n{render_text(err.problems)}"
        pytestconfig.stash[BROKEN] = failure
    else:
        for problem in build.warnings:
            warnings.warn(XceSiteWarning(render_text([problem]).splitlines()[0]), stacklevel=1)
        return build
    if pytestconfig.getoption(SYRUPY_UPDATE, default=False):
        # syrupy deletes the snapshots of tests that failed on --snapshot-update, and keeps
        # those of skipped ones: skip, and fail the run at its end (pytest_sessionfinish)
        pytestconfig.stash[NOT_COMPILED] = failure
        pytest.skip(f"{failure}its snapshots are kept")
    pytest.fail(failure, pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """A test that never reached its snapshot because the site does not compile is, for
    syrupy, not run: its snapshots are not "unused" (nor deleted by an update)."""
    yield
    if BROKEN in item.config.stash and "xce_build" in getattr(item, "fixturenames", ()):
        syrupy = getattr(item.config, "_syrupy", None)
        if syrupy is not None and hasattr(syrupy, "ran_item"):
            syrupy.ran_item(item.nodeid, "skipped")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """An update run whose site did not compile fails, though its tests were only skipped."""
    if NOT_COMPILED in session.config.stash and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    """... and says why at its end, where the skips alone would not."""
    failure = config.stash.get(NOT_COMPILED, None)
    if failure is not None:
        terminalreporter.section("xce-gitops: snapshots not updated", red=True)
        terminalreporter.write(f"{failure}its tests were skipped, their snapshots kept\n")
    elif BROKEN in config.stash:
        terminalreporter.section("xce-gitops: the site does not compile", red=True)
        terminalreporter.write("the tests that use it could not compare their snapshots: fix "
                               "the site-config (the errors above), then run pytest again\n")


@pytest.fixture(scope="session")
def xce_role_allowlists(xce_build: SiteBuild) -> str:
    """Each role's opcodes (and denies), one per line: ``role worker holds host.join (201,
    host, write)``."""
    from compiler.site_repo.review_data import role_allowlists

    return role_allowlists(xce_build.allowlists)


@pytest.fixture(scope="session")
def xce_proxy_allowlists(xce_build: SiteBuild) -> str:
    """Each proxy instance's opcodes, scoped ones with their providers, one per line."""
    from compiler.site_repo.review_data import proxy_allowlists

    return proxy_allowlists(xce_build.allowlists)


@pytest.fixture(scope="session")
def xce_policy_review(xce_build: SiteBuild) -> str:
    """What the site's ``policy:`` section gives and takes against the policies alone, with
    its escalations, and the status of every guardrail and waiver."""
    from compiler.site_repo.review_data import policy_review

    return policy_review(xce_build)


@pytest.fixture(scope="session")
def xce_map_summary(xce_build: SiteBuild) -> str:
    """The desired map in brief: entries per kind and provider, hosts per group, pools,
    volumes, quotas and the planning settings, one per line."""
    from compiler.site_repo.review_data import map_summary

    return map_summary(xce_build)
