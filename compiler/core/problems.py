"""The one problem type that every stage (load, validate, compile, plan, apply) reports into.

A problem is located either precisely (file, line, column) or by a YAML path inside a
file (``ypath``) that the locator resolves to a line and column later, so the fast
loader never has to keep line information for files that have no problem.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from enum import StrEnum

YPath = tuple[str | int, ...]


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, slots=True)
class Where:
    """A place in a source file: a YAML path, and once located, a 1-based line and column."""

    file: str
    ypath: YPath = ()
    line: int | None = None
    column: int | None = None
    key: bool = False  # point at the mapping key rather than its value

    def child(self, *parts: str | int) -> Where:
        return Where(self.file, self.ypath + parts)

    def at_key(self) -> Where:
        return replace(self, key=True)

    def label(self) -> str:
        if self.line is None:
            return self.file
        return f"{self.file}:{self.line}:{self.column or 1}"


@dataclass(frozen=True, slots=True)
class Problem:
    """One finding: a stable code, what is wrong, how to fix it, and where."""

    code: str
    message: str
    hint: str = ""
    where: Where | None = None
    severity: Severity = Severity.ERROR
    subject: str | None = None  # a provider, entry id or role when there is no file
    also: tuple[Where, ...] = ()  # other places involved (e.g. the first definition)

    @property
    def file(self) -> str | None:
        return self.where.file if self.where else None

    @property
    def line(self) -> int | None:
        return self.where.line if self.where else None

    @property
    def column(self) -> int | None:
        return self.where.column if self.where else None

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.file or "", self.line or 0, self.column or 0, self.code, self.message)

    def to_json(self, *, place: bool = True) -> dict[str, object]:
        """The one JSON form of a problem, as every report, reply, plan and drift report
        writes it. ``place=False`` leaves out where it is (file, line, column, also): the
        form of a plan's and a drift report's problems, which have no file."""
        doc: dict[str, object] = {"code": self.code, "severity": self.severity.value}
        if place:
            doc.update(file=_unicode(self.file), line=self.line, column=self.column)
        doc.update(subject=_unicode(self.subject), message=_unicode(self.message),
                   hint=_unicode(self.hint))
        if place:
            doc["also"] = [{"file": _unicode(w.file), "line": w.line, "column": w.column}
                           for w in self.also]
        return doc


def _unicode(text: str | None) -> str | None:
    """``text`` as JSON can hold it: a lone surrogate (a byte of a file name or argument
    that is not UTF-8, as Python reads one) written as its escape, ``\\udcff``."""
    if text is None or text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


@dataclass(slots=True)
class Problems:
    """Collects every problem of a run; stages never stop at the first one."""

    items: list[Problem] = field(default_factory=list)

    def add(self, problem: Problem) -> None:
        self.items.append(problem)

    def error(
        self,
        code: str,
        message: str,
        hint: str = "",
        where: Where | None = None,
        *,
        subject: str | None = None,
        also: Iterable[Where] = (),
    ) -> None:
        self.items.append(Problem(code, message, hint, where, Severity.ERROR, subject, tuple(also)))

    def warning(
        self, code: str, message: str, hint: str = "", where: Where | None = None, *,
        subject: str | None = None,
    ) -> None:
        """Reported but not failing (exit 0): the same fields as an error."""
        self.items.append(Problem(code, message, hint, where, Severity.WARNING, subject))

    def extend(self, problems: Iterable[Problem]) -> None:
        self.items.extend(problems)

    @property
    def has_errors(self) -> bool:
        return any(p.severity is Severity.ERROR for p in self.items)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.items if p.severity is Severity.ERROR]

    def __iter__(self) -> Iterator[Problem]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def sorted(self) -> list[Problem]:
        return sorted(self.items, key=Problem.sort_key)


class Hints(dict[str, str]):
    """A code table's default hints (code → hint), written once beside its codes, so a
    code's usual advice reads the same wherever the problem is made."""

    def problem(self, code: str, message: str, subject: str | None = None,
                hint: str | None = None, severity: Severity = Severity.ERROR,
                where: Where | None = None) -> Problem:
        """A problem with ``code``'s default hint, unless ``hint`` is given ("" for none)."""
        return Problem(code, message, self.get(code, "") if hint is None else hint, where,
                       severity, subject)


class UserError(Exception):
    """Raised to stop a command because of the user's input; carries the problems to show."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(p.message for p in self.problems))
