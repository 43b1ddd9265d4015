"""Docs that must not drift from the code: every problem code is documented, the example
site the README and the demo use still compiles."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = re.compile(r"\bXCE\d{3}\b")


def _codes_in(paths: list[Path]) -> set[str]:
    return {c for p in paths for c in CODE.findall(p.read_text(encoding="utf-8"))}


def test_every_code_in_the_source_is_documented() -> None:
    source = [*(ROOT / "compiler").rglob("*.py"), *(ROOT / "reconciler").rglob("*.py")]
    used = _codes_in(source)
    documented = _codes_in([ROOT / "docs" / "errors.md"])
    assert used, "no codes found: the pattern is wrong"
    missing = sorted(used - documented)
    assert not missing, f"codes used but not in docs/errors.md: {missing}"


def test_readme_commands_exist() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for script in re.findall(r"\./(scripts/[\w.-]+\.sh)", readme):
        assert (ROOT / script).is_file(), script
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "scripts/test.sh" in ci and "scripts/test.sh" in readme


def test_the_example_site_admins_edit_still_compiles(tmp_path: Path) -> None:
    """site-config/ is the example of the README, the demo and ``xce-init --example``, and an
    admin trying things out may edit it (add a host group, say); so the suite asks of it only
    that it compiles. Everything exact is asserted on the pinned copy, tests/example_site/."""
    import compiler.cmds.compile

    out = str(tmp_path / "build")
    assert compiler.cmds.compile.main([str(ROOT / "site-config"), "--out", out]) == 0


def test_usage_mistakes_exit_1_not_2() -> None:
    """argparse's exit 2 would read as "changes" to a CI job using detailed exit codes."""
    import compiler.cmds.compile
    import compiler.cmds.policy
    import reconciler.cmds.apply
    import reconciler.cmds.digest
    import reconciler.cmds.lock
    import reconciler.cmds.map
    import reconciler.cmds.plan

    for main in (compiler.cmds.compile.main, compiler.cmds.policy.main, reconciler.cmds.apply.main,
                 reconciler.cmds.digest.main, reconciler.cmds.lock.main, reconciler.cmds.map.main,
                 reconciler.cmds.plan.main):
        assert main(["--no-such-option"]) == 1, main.__module__
