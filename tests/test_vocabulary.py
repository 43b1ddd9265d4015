"""The contract's words are written once: entry kinds, host states and management levels are
spelled only in compiler/contract/vocabulary.py; every other module of compiler/ and
reconciler/ uses its names (``EntryKind.HOST``, ``HostState.AVAILABLE``, ``Level.OBSERVE``).

A string constant equal to one of these words anywhere else fails, unless it is
- documentation: a docstring; a pydantic field's ``description=`` or ``examples=``; an
  argparse ``help=``;
- a command-line name: a positional argument of ``add_argument`` or ``add_parser``;
- a field, column or command name among others: a word that stands beside a string that is
  no word, among one dict's keys or in one tuple, list or set (``{"host": p.host, "active":
  ...}``, ``("name", "holder", "host")``); a per-kind table or a set of kinds holds words
  only, so it is still looked at;
- or in a place named in ``ALLOWED``, where the word means something else.
f-strings are not words on their own (``f"host/{name}"``) and are not looked at.
"""

from __future__ import annotations

import ast
from pathlib import Path

from compiler.contract.vocabulary import EntryKind, HostState, Level

ROOT = Path(__file__).resolve().parent.parent
VOCABULARY = "compiler/contract/vocabulary.py"
WORDS = frozenset({*EntryKind, *HostState, *Level})
_DOC_KEYWORDS = frozenset({"description", "examples", "help"})
_CLI_CALLS = frozenset({"add_argument", "add_parser"})

# module: (the words it may write, and what they mean there instead)
ALLOWED: dict[str, tuple[frozenset[str], str]] = {
    "compiler/checks/index.py": (
        frozenset({"counter", "dataset", "volume"}),
        "the noun of a name's messages ('unknown volume ...', 'dataset ... defined twice')"),
    "compiler/checks/providers.py": (
        frozenset({"dataset-copy", "volume"}),
        "a built-in provider kind (provider_params.BuiltinKind), and a use a provider is bound to"),
    "compiler/checks/references.py": (
        frozenset({"volume"}), "the path of a quota's `volume:` field in site-config"),
    "compiler/contract/bindings.py": (frozenset({"host"}), "a proxy's `host` field"),
    "compiler/model/errors.py": (frozenset({"expected"}), "a key of a pydantic error's ctx"),
    "compiler/model/quotas.py": (
        frozenset({"volume"}), "the quota's `volume:` field in its JSON Schema"),
    "compiler/model/retention.py": (
        frozenset({"report"}), "an orphan policy (`orphans: report`), not a management level"),
    "compiler/policy/review.py": (
        frozenset({"lost"}), "a role or proxy that lost an operation, not a host state"),
    "compiler/policy/site.py": (frozenset({"host"}), "a proxy's `host` field in bindings"),
    "reconciler/plan/file.py": (
        frozenset({"instance"}), "the plan's `instance` field: which plan object this is"),
    "reconciler/plan/model.py": (
        frozenset({"instance"}), "the plan's `instance` field: which plan object this is"),
    "reconciler/plan/parents.py": (
        frozenset({"dataset"}), "a dataset copy's spec field naming its dataset"),
    "reconciler/providers/dataset_copy.py": (
        frozenset({"dataset", "dataset-copy"}),
        "a copy's spec field naming its dataset, and the provider's own kind "
        "(provider_params.BuiltinKind); its entries' kind is EntryKind.DATASET_COPY"),
    "reconciler/status/gather.py": (
        frozenset({"released"}), "a provider lease handed over at once (SIGTERM), not a host "
        "state"),
    "reconciler/testdoubles/sim_provider.py": (
        frozenset({"license"}), "the license simulator's own kind, not an entry kind"),
}


def _is_word(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in WORDS


def _among_names(strings: list[ast.expr | None]) -> set[int]:
    """The words of one collection that also holds a string that is no word: field names."""
    constants = [n for n in strings if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    if all(_is_word(n) for n in constants):
        return set()
    return {id(n) for n in constants if _is_word(n)}


def _documentation(node: ast.AST) -> set[int]:
    """A docstring, a description, examples or help, and every f-string."""
    if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        first = node.body[0] if node.body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            return {id(first.value)}
    elif isinstance(node, ast.JoinedStr) or (
            isinstance(node, ast.keyword) and node.arg in _DOC_KEYWORDS):
        return {id(n) for n in ast.walk(node)}
    return set()


def _not_words(tree: ast.AST) -> set[int]:
    """The string constants that are not vocabulary words though spelled as one."""
    found: set[int] = set()
    for node in ast.walk(tree):
        found |= _documentation(node)
        if isinstance(node, ast.Dict):
            found |= _among_names(list(node.keys))
        elif isinstance(node, ast.Tuple | ast.List | ast.Set):
            found |= _among_names(list(node.elts))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in _CLI_CALLS):
            found |= {id(n) for n in node.args}
    return found


def words_in(source: str) -> list[tuple[int, str]]:
    """(line, word) for each vocabulary word written as a string constant in ``source``."""
    tree = ast.parse(source)
    skip = _not_words(tree)
    return sorted((node.lineno, node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and node.value in WORDS and id(node) not in skip)


def _scan() -> dict[str, list[tuple[int, str]]]:
    found: dict[str, list[tuple[int, str]]] = {}
    for top in ("compiler", "reconciler"):
        for path in sorted((ROOT / top).rglob("*.py")):
            shown = path.relative_to(ROOT).as_posix()
            if shown == VOCABULARY:
                continue
            allowed = ALLOWED.get(shown, (frozenset(), ""))[0]
            words = [(line, word) for line, word in words_in(path.read_text(encoding="utf-8"))
                     if word not in allowed]
            if words:
                found[shown] = words
    return found


def test_the_words_are_written_only_in_the_vocabulary() -> None:
    found = _scan()
    assert not found, "write these with compiler.contract.vocabulary's names:\n" + "\n".join(
        f"{module}:{line}: {word!r}" for module, words in sorted(found.items())
        for line, word in words)


def test_each_allowed_word_is_written_there() -> None:
    """An ``ALLOWED`` word no longer written in its module is taken off the list."""
    written = {module: {word for _, word in words_in((ROOT / module).read_text(encoding="utf-8"))}
               for module in ALLOWED}
    stale = {module: sorted(words - written[module])
             for module, (words, _) in ALLOWED.items() if words - written[module]}
    assert not stale, f"no longer written there: {stale}"


def test_the_check_finds_a_word_and_passes_its_name() -> None:
    """Self-test on snippets: a kind, a host state, a level in code are found, in a per-kind
    table and a set of kinds too; the names, an f-string, a docstring, a description, a
    command-line name and a field name among others are not."""
    wrong = ('if entry.kind == "host" and entry.state in ("available", "lost"):\n'
             '    level = "observe"\n'
             'RULES = {"host": hosts, "volume-dir": dirs}\n')
    assert words_in(wrong) == [(1, "available"), (1, "host"), (1, "lost"), (2, "observe"),
                               (3, "host"), (3, "volume-dir")]
    right = ('"""A host is available."""\n'
             'if entry.kind == EntryKind.HOST and entry.state == HostState.AVAILABLE:\n'
             '    entry_id = f"host/{name}"\n'
             'x = Field(description="host", examples=["volume-dir"])\n'
             'p.add_argument("volume", help="the volume")\n'
             'doc = {"host": proxy.host, "active": list(proxy.active)}\n'
             'columns = ("name", "holder", "host")\n')
    assert words_in(right) == []
