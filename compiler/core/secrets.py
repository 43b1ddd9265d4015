"""What a secret is, once: the keys that hold one, the references that name one, and redaction.

Site-config holds a secret only as a reference (``env:NAME`` or ``file:/absolute/path``);
the value is read by whoever needs it, when it needs it (``resolve``). A key whose name says
it holds a secret (``is_secret_key``) may hold only a reference: the compiler refuses a
literal there, and every output (plan, report, log, error message) shows its value as
``SENSITIVE`` unless it is a reference. What a provider prints is scrubbed of the resolved
values. ``Redactor`` is the one redaction every output goes through. The reconciler imports
this module; it imports nothing of the project, so both sides apply the same rule.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import orjson

from compiler.core.file_io import SECRET_CAP, Refused, read_input

SENSITIVE = "(sensitive)"
MIN_SECRET_CHARS = 4  # a shorter value would blank out ordinary words of every message
REFERENCE_FORMS = "env:NAME or file:/path"  # the path is absolute

# ``file:`` takes an absolute path only: a relative one would be read from whatever directory
# the reading process runs in (an external provider runs in its own state folder).
_REFERENCE_RE = re.compile(r"^(env:[A-Za-z_][A-Za-z0-9_]*|file:/\S+)$")
REFERENCE_PATTERN = _REFERENCE_RE.pattern  # for the JSON schema

# A key is split into words (at ``_``, ``-``, ``.``, ``[``, ``]``, spaces and camelCase).
_WORD_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# A word containing one of these names a secret (``authtoken``, ``passwords``, ``clientsecret``).
_SECRET_STEMS = ("password", "passwd", "passphrase", "secret", "token", "credential")
# Short words that name a secret only as a whole word (not ``author``, ``compass``).
_SECRET_WORDS = frozenset({"pass", "auth", "authorization"})
# ``key`` names a secret only after one of these (``api_key``, ``privateKey``, ``accesskey``);
# a bare ``key``, ``cache_key``, ``sort_key`` or ``public_key`` does not.
_KEY_QUALIFIERS = ("api", "private", "access", "signing", "encryption")


def _words(name: str) -> list[str]:
    return [w.lower() for w in _WORD_RE.findall(name)]


def _secret_word(word: str, previous: str) -> bool:
    if word in _SECRET_WORDS or any(stem in word for stem in _SECRET_STEMS):
        return True
    if word in ("key", "keys"):
        return previous in _KEY_QUALIFIERS
    return any(word in (q + "key", q + "keys") for q in _KEY_QUALIFIERS)


@functools.lru_cache(maxsize=4096)  # a plan of 500k entries asks about a few keys millions of times
def is_secret_key(name: str) -> bool:
    """Whether a key (or any key on a dotted path such as ``spec.auth.user``) holds a secret."""
    words = _words(name)
    return any(_secret_word(w, words[i - 1] if i else "") for i, w in enumerate(words))


def is_reference(value: Any) -> bool:
    """Whether ``value`` is a secret reference: ``env:NAME`` or ``file:/absolute/path``."""
    return isinstance(value, str) and _REFERENCE_RE.fullmatch(value) is not None


class SecretError(Exception):
    """A secret could not be read; the message names the reference, never a value."""

    def __init__(self, message: str, *, not_a_reference: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.not_a_reference = not_a_reference  # the text is no reference (not: unreadable)


def resolve(reference: str) -> str:
    """The secret's value, read now (a file's content without its surrounding whitespace)."""
    if not is_reference(reference):
        raise SecretError(f"secret must be a reference ({REFERENCE_FORMS})", not_a_reference=True)
    kind, _, name = reference.partition(":")
    if kind == "env":
        value = os.environ.get(name)
        if value is None:
            raise SecretError(f"secret reference env:{name} is not set")
        return value
    try:  # read as every input is: a FIFO or a device is refused, never waited on or drained
        return read_input(name, SECRET_CAP).decode("utf-8").strip()
    except Refused as err:
        raise SecretError(f"secret reference file:{name}: {err.problem.message}") from None
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) else "not UTF-8 text"
        raise SecretError(f"secret reference file:{name}: {reason}") from None


def _mask(value: Any) -> Any:
    """A secret key's value as shown: references stay, every literal below becomes SENSITIVE."""
    if is_reference(value) or value is None or isinstance(value, bool):
        return value  # true, false and null carry no secret (the compiler allows them too)
    if isinstance(value, Mapping):
        return {k: _mask(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_mask(v) for v in value]
    return SENSITIVE


def _by_key(value: Any, key: str = "") -> Any:
    """``value`` as it may be shown, given the name of the key that holds it."""
    if key and is_secret_key(key):
        return _mask(value)
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value  # the common leaves, without the slower ABC checks below
    if kind is dict or isinstance(value, Mapping):
        return {k: _by_key(v, k if type(k) is str else str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_by_key(v) for v in value]
    return value


_PLAIN = frozenset({str, int, float, bool, type(None)})  # leaves ``_by_key`` passes as they are


@functools.lru_cache(maxsize=4096)
def _hiding_key(key: Any) -> bool:
    """A key under which ``_by_key`` may change what it holds: a secret key, or no string."""
    return type(key) is not str or is_secret_key(key)


# Keys found not to hide (strings only), so that a dict whose keys are all known is judged
# in one set operation: entries use few keys, over and over. Bounded, whatever a map holds.
_SHOWN_KEYS: set[str] = set()
_MAX_SHOWN_KEYS = 65536


def _keys_shown(value: dict[Any, Any]) -> bool:
    """Whether no key of ``value`` hides what it holds (``_hiding_key``); ``_SHOWN_KEYS``
    learns them. Its callers first ask that set whether it knows them all already."""
    if any(map(_hiding_key, value)):
        return False
    if len(_SHOWN_KEYS) >= _MAX_SHOWN_KEYS:
        _SHOWN_KEYS.clear()
    _SHOWN_KEYS.update(value)  # all strings: a key of another type hides
    return True


def _leaf_shown(value: Any, pattern: re.Pattern[str] | None) -> bool:
    """``_shown_as_is`` of a value that is neither a dict nor a list."""
    kind = type(value)
    return kind in _PLAIN and (pattern is None or kind is not str
                               or pattern.search(value) is None)


def _shown_as_is(value: Any, pattern: re.Pattern[str] | None) -> bool:
    """Whether redaction gives ``value`` back unchanged, so it need not be copied: dicts,
    lists and plain leaves only, no key that hides at any depth, and no string in which
    ``pattern`` finds a secret value. Plain loops: this runs on every action of a plan."""
    kind = type(value)
    if kind is dict:
        if not (_SHOWN_KEYS.issuperset(value) or _keys_shown(value)):
            return False
        items = value.values()
    elif kind is list:
        items = value
    else:
        return _leaf_shown(value, pattern)
    if pattern is None and _PLAIN.issuperset(map(type, items)):
        return True
    for item in items:
        if type(item) is str:
            if pattern is not None and pattern.search(item) is not None:
                return False
        elif type(item) not in _PLAIN and not _shown_as_is(item, pattern):
            return False
    return True


def _secret_values(references: Iterable[str]) -> tuple[str, ...]:
    """What to hide for these secret references: each value that resolves now, its lines
    (text is redacted line by line) and its JSON- and URL-escaped forms, longest first."""
    found: set[str] = set()
    for ref in references:
        try:
            value = resolve(ref)
        except SecretError:
            continue  # nothing resolves, so nothing can be leaked
        for form in (value, *value.splitlines()):
            found.update((form, orjson.dumps(form).decode()[1:-1], quote(form, safe="")))
    return tuple(sorted((v for v in found if len(v) >= MIN_SECRET_CHARS), key=len, reverse=True))


@dataclass(frozen=True, slots=True)
class Redactor:
    """The one redaction: what any output (plan, drift report, ledger, log, error message,
    mail) may show. Values under secret keys are masked (``value``), and the given secret
    values are scrubbed wherever something echoed them, in any field or text (``text``).

    ``Redactor.of(references)`` hides what the references resolve to now, in each form a
    provider may print it; ``Redactor((token,))`` hides a value the caller holds itself."""

    values: tuple[str, ...] = ()
    _pattern: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:  # the values as one search, for ``value``'s quick test
        found = re.compile("|".join(map(re.escape, self.values))) if self.values else None
        object.__setattr__(self, "_pattern", found)

    @classmethod
    def of(cls, references: Iterable[str]) -> Redactor:
        return cls(_secret_values(references))

    def text(self, text: str) -> str:
        """``text`` with every secret value replaced by ``SENSITIVE``: the one redaction of
        free text (providers' error messages and stderr logs, forges' and servers' replies)."""
        for value in self.values:
            text = text.replace(value, SENSITIVE)
        return text

    def shows(self, value: Any, path: str = "") -> bool:
        """Whether ``value(path, value)`` gives ``value`` back as it is: the test alone,
        which costs less than the redaction when there is, as almost always, nothing to hide."""
        return not (path and is_secret_key(path)) and _shown_as_is(value, self._pattern)

    def value(self, path: str, value: Any) -> Any:
        """A field's value at dotted ``path`` ("" for a whole document), judged by every key
        on its path (``spec.auth.token``) and by every key inside it. A value with nothing to
        hide comes back as it is (the same object), without a copy."""
        if path and is_secret_key(path):
            return self._scrub(_mask(value))
        if _shown_as_is(value, self._pattern):
            return value
        return self._scrub(_by_key(value))

    def _scrub(self, value: Any) -> Any:
        if not self.values:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self._scrub(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._scrub(v) for v in value]
        return value
