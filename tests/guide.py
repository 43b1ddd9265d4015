"""Follow a markdown guide the way its reader does, so every output it shows is real.

The reader writes the guide's files, applies its edits and types its console transcripts, in
a folder of their own; each command's output is then compared with what the guide shows.
HTML comments (invisible on the rendered page) say what a code block is for:

- ``<!-- guide: file PATH -->`` before a block: the reader creates PATH with that content;
- ``<!-- guide: edit PATH -->`` before a ``diff`` block: each ``-`` line of PATH (it must be
  there exactly once) is replaced by the ``+`` lines after it;
- every ``console`` block is a transcript: ``$ command`` lines, each followed by what it
  prints, stdout and stderr together as a terminal shows them. ``$ cd DIR`` moves the
  reader, ``$ echo $?`` shows the exit code of the command before it; every other command
  must exit 0. In the shown output ``<commit>`` stands for a revision (12 hex digits),
  ``<seconds>`` for a duration such as ``0.42s``, ``<n>`` for a number, ``<digest>`` for the
  64 hex digits of a digest that is not shown, and a line ``…`` for any lines.

Digests (``sha256:`` and 64 hex digits) are compared on their own, so that a stale one can be
rewritten in place (:func:`rewrite_digests`) instead of edited by hand.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

# Runs one shell command in a folder, stderr merged into stdout.
Runner = Callable[[str, Path], subprocess.CompletedProcess[str]]

DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
PLACEHOLDERS = {
    "<commit>": "[0-9a-f]{12}",
    "<seconds>": r"[0-9]+(?:\.[0-9]+)?s",
    "<n>": "[0-9]+",
    "<digest>": "[0-9a-f]{64}",
}
ANY_LINES = "…"
UPDATE_ENV = "XCE_UPDATE_DOCS"
ECHO_EXIT = "echo $?"
_MARKER = re.compile(r"<!--\s*guide:\s*(file|edit)\s+(\S+)\s*-->")
_FENCE = "```"


@dataclass(frozen=True)
class Block:
    """A fenced code block: its language, its marker (kind, path) if any, and its lines;
    ``line`` is the 1-based line of its first content line in the guide."""

    lang: str
    marker: tuple[str, str] | None
    lines: list[str]
    line: int


@dataclass(frozen=True)
class Command:
    """A ``$`` line of a transcript and the output shown under it (from guide line ``line``)."""

    text: str
    shown: list[str]
    line: int
    exit_shown: bool  # the next command of the transcript is ``echo $?``


@dataclass(frozen=True)
class Ran:
    """A command as the reader ran it: exit code and the lines it printed."""

    command: Command
    returncode: int
    printed: list[str]

    @property
    def failed(self) -> bool:
        """It exited non-zero where the guide does not show its exit code."""
        return self.returncode != 0 and not self.command.exit_shown


def shell(environ: dict[str, str]) -> Runner:
    """Run a command line with bash in that environment, as the reader's terminal would (80
    columns wide, as the guide's transcripts are)."""
    terminal = {**environ, "COLUMNS": "80"}

    def run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-c", "exec 2>&1\n" + command], cwd=cwd, env=terminal,
                              capture_output=True, text=True, timeout=300, check=False)

    return run


def blocks(text: str) -> Iterator[Block]:
    """The fenced blocks of a markdown text, with the marker on the last line before each."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].startswith(_FENCE):
            i += 1
            continue
        before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        found = _MARKER.fullmatch(before.strip())
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith(_FENCE))
        marker = (found[1], found[2]) if found else None
        yield Block(lines[i][len(_FENCE):].strip(), marker, lines[i + 1:end], i + 2)
        i = end + 1


def commands(block: Block) -> list[Command]:
    """The commands of a console block, a trailing ``\\`` continuing a command line."""
    found: list[Command] = []
    lines = block.lines
    i = 0
    while i < len(lines):
        assert lines[i].startswith("$ "), f"guide line {block.line + i}: output before any command"
        start, text = i, lines[i][2:]
        while text.endswith("\\"):
            i += 1
            text = text[:-1] + lines[i]
        i += 1
        first = i
        while i < len(lines) and not lines[i].startswith("$ "):
            i += 1
        found.append(Command(text.strip(), lines[first:i], block.line + start, False))
    return [
        Command(c.text, c.shown, c.line, exit_shown=n < len(found) and found[n].text == ECHO_EXIT)
        for n, c in enumerate(found, start=1)
    ]


def apply_edit(path: Path, diff: list[str], where: str) -> None:
    """Replace each ``-`` line of the file by the ``+`` lines that follow it in the diff."""
    assert path.is_file(), f"{where}: the guide edits {path}, which does not exist"
    text = path.read_text(encoding="utf-8")
    for old, new in _hunks(diff):
        assert text.count(old) == 1, f"{where}: {path.name} does not hold this line once: {old!r}"
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")


def _hunks(diff: list[str]) -> Iterator[tuple[str, str]]:
    """(removed line, its replacement) pairs; a removed line keeps its newline."""
    i = 0
    while i < len(diff):
        assert diff[i].startswith("-"), f"an edit starts with the line it removes: {diff[i]!r}"
        added = []
        j = i + 1
        while j < len(diff) and diff[j].startswith("+"):
            added.append(diff[j][1:] + "\n")
            j += 1
        yield diff[i][1:] + "\n", "".join(added)
        i = j


def follow(guide: Path, home: Path, run: Runner) -> list[Ran]:
    """Do what the guide says, in ``home`` and never outside it: every command as it ran, in
    order, up to the first one that fails where the guide expects it to succeed (what
    follows would fail too)."""
    cwd = home
    ran: list[Ran] = []
    for block in blocks(guide.read_text(encoding="utf-8")):
        where = f"{guide.name}:{block.line}"
        assert cwd.resolve().is_relative_to(home.resolve()), f"{where}: the guide left {home}"
        if block.marker is not None:
            kind, name = block.marker
            target = cwd / name
            if kind == "file":
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text("\n".join(block.lines) + "\n", encoding="utf-8")
            else:
                assert block.lang == "diff", f"{where}: an edit is a ```diff block"
                apply_edit(target, block.lines, where)
        elif block.lang == "console":
            for command in commands(block):
                cwd = _type(command, cwd, run, ran)
                if ran[-1].failed:
                    return ran
    return ran


def _type(command: Command, cwd: Path, run: Runner, ran: list[Ran]) -> Path:
    """Run one command of a transcript, recording it; the folder the reader is in after it."""
    if command.text == ECHO_EXIT:
        assert ran, f"guide line {command.line}: {ECHO_EXIT} before any command"
        ran.append(Ran(command, 0, [str(ran[-1].returncode)]))
        return cwd
    if command.text.startswith("cd "):
        there = (cwd / command.text[3:].strip()).resolve()
        if there.is_dir():
            ran.append(Ran(command, 0, []))
            return there
        ran.append(Ran(command, 1, [f"cd: {there}: no such folder"]))
        return cwd
    done = run(command.text, cwd)
    printed = [line.rstrip() for line in done.stdout.splitlines()]
    ran.append(Ran(command, done.returncode, printed))
    return cwd


def _pattern(shown: list[str]) -> re.Pattern[str]:
    """The shown output as a regular expression; each shown digest is a group."""
    parts = []
    for line in shown:
        if line.strip() == ANY_LINES:
            parts.append(r"(?:[^\n]*\n)*?")
            continue
        piece = re.escape(line.rstrip())
        for digest in DIGEST.findall(line):
            piece = piece.replace(re.escape(digest), "(sha256:[0-9a-f]{64})", 1)
        for placeholder, regex in PLACEHOLDERS.items():
            piece = piece.replace(re.escape(placeholder), regex)
        parts.append(piece + "\n")
    return re.compile("".join(parts))


def printed_digests(ran: Ran) -> list[tuple[str, str]] | None:
    """(shown, printed) for each digest the guide shows for this command, or None when the
    output differs in more than its digests."""
    printed = "".join(line + "\n" for line in ran.printed)
    match = _pattern(ran.command.shown).fullmatch(printed)
    if match is None:
        return None
    shown = [d for line in ran.command.shown for d in DIGEST.findall(line)]
    return list(zip(shown, match.groups(), strict=True))


def explain(ran: Ran) -> str:
    """A mismatch as a reviewer reads it: the command, what the guide shows, what it printed."""
    shown = "\n".join(f"    {line}" for line in ran.command.shown) or "    (nothing)"
    printed = "\n".join(f"    {line}" for line in ran.printed) or "    (nothing)"
    return (f"guide line {ran.command.line}: $ {ran.command.text} (exit {ran.returncode})\n"
            f"  the guide shows:\n{shown}\n  it printed:\n{printed}")


@dataclass(frozen=True)
class Verdict:
    """What differs between the guide and the reader's run: readable problems, and the stale
    digests (shown → printed)."""

    problems: list[str]
    stale: dict[str, str]


def verdict(ran: list[Ran]) -> Verdict:
    """Every command exits 0 unless its exit code is shown, and prints what the guide shows."""
    problems: list[str] = []
    stale: dict[str, str] = {}
    for one in ran:
        pairs = printed_digests(one)
        if one.failed:
            problems.append(f"it fails, and the guide shows no `echo $?` after it:\n{explain(one)}")
            continue
        if pairs is None:
            problems.append(f"it prints other lines than the guide shows:\n{explain(one)}")
            continue
        for shown, printed in pairs:
            if stale.setdefault(shown, printed) != printed:
                problems.append(f"the guide shows {shown} for two different digests:\n"
                                + explain(one))
    return Verdict(problems, {old: new for old, new in stale.items() if old != new})


def rewrite_digests(guide: Path, stale: dict[str, str]) -> None:
    """Write the printed digests into the guide in place of the stale ones it shows."""
    text = guide.read_text(encoding="utf-8")
    for old, new in stale.items():
        text = text.replace(old, new)
    guide.write_text(text, encoding="utf-8")
