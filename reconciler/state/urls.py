"""Which backend a ``--state`` value names, and how to show a URL without its password."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from reconciler.state.errors import bad_url

POSTGRES_SCHEMES = ("postgresql", "postgres")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


@dataclass(frozen=True, slots=True)
class SqliteTarget:
    path: Path


@dataclass(frozen=True, slots=True)
class PostgresTarget:
    url: str  # the full URL, password included: only ever handed to the driver
    label: str  # what messages show
    password: str | None


def parse_target(text: str) -> SqliteTarget | PostgresTarget:
    """A plain path or ``sqlite:`` URL is SQLite; ``postgres(ql)://`` is PostgreSQL."""
    match = _SCHEME.match(text)
    scheme = match.group(1).lower() if match else ""
    # a one-letter "scheme" is a Windows drive, and anything else without "://" a file name
    if not match or len(scheme) == 1 or (scheme != "sqlite" and "://" not in text):
        return SqliteTarget(Path(text))
    if scheme == "sqlite":
        parts = urlsplit(text)
        if parts.netloc or not parts.path:
            raise bad_url(text, "write sqlite:///absolute/path or sqlite:relative/path")
        return SqliteTarget(Path(unquote(parts.path)))
    if scheme in POSTGRES_SCHEMES:
        parts = urlsplit(text)
        return PostgresTarget(text, redact(text), unquote(parts.password or "") or None)
    shown = redact(text) if "@" in text else text
    raise bad_url(shown, f"unknown scheme {scheme!r}")


def redact(url: str) -> str:
    """``scheme://user@host:port/db``: no password, no query (it may carry ``password=``)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return f"{url.split(':', 1)[0]}://<unparsable URL>"
    user = f"{parts.username}@" if parts.username else ""
    host = parts.hostname or "localhost"
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{user}{host}{f':{port}' if port else ''}{parts.path}"


def without_password(value: str) -> str:
    """A ``--state`` value that may be written down (a saved plan): a PostgreSQL URL loses
    its password, in the user part or a ``password=`` parameter, and keeps the rest (the
    driver then takes the password from PGPASSWORD or a pgpass file); a path is kept."""
    target = parse_target(value)
    if not isinstance(target, PostgresTarget) or (
            target.password is None and "password" not in value.lower()):
        return value
    parts = urlsplit(value)
    netloc = parts.netloc.rpartition("@")[2]
    if parts.username:
        netloc = f"{parts.username}@{netloc}"
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
                       if k.lower() != "password"])
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
