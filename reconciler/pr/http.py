"""One small JSON-over-HTTPS client for the forges' REST APIs, on the standard library.

Every request has a timeout; redirects are not followed (the token goes only to the address
the CI set), nor is a next-page link to another host. Whatever goes wrong becomes one
Problem naming the forge, the method and URL (never the token), what the forge said, and
a hint: the forge explains its own refusals (``Explain``), the network is explained here.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from compiler.cli.runner import DISTRIBUTION, product_version
from compiler.core.problems import Problem, UserError
from compiler.core.secrets import Redactor
from reconciler.pr.codes import BAD_ANSWER, DENIED, HINTS, NOT_FOUND, REFUSED, UNREACHABLE

SAID_CHARS = 300  # of a forge's error message: enough to read, not a page of HTML
_LINK = re.compile(r'<([^>]*)>\s*;[^,]*\brel="?([^",;]+)"?')


@dataclass(frozen=True)
class Reply:
    url: str
    status: int
    body: Any
    headers: Mapping[str, str]


@dataclass(frozen=True)
class Failure:
    """A request the forge answered with an error, for the forge to explain."""

    method: str
    url: str
    status: int
    said: str  # the forge's own message, redacted


Explain = Callable[[Failure], str]  # the hint for a refusal


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        """A 3xx stays an answer: following it would carry the token elsewhere."""
        return None


class JsonClient:
    """Requests to one API (``base``), with its auth headers, reported as ``label``."""

    def __init__(self, label: str, base: str, headers: Mapping[str, str], *, timeout: float,
                 secret: str, explain: Explain, variable: str) -> None:
        self.label, self.base, self.timeout = label, base, timeout
        self._headers = {"User-Agent": f"{DISTRIBUTION}/{product_version()}",
                         "Accept": "application/json", **headers}
        self._redact, self._explain, self._variable = Redactor((secret,)), explain, variable
        self._opener = urllib.request.build_opener(_NoRedirect)
        parts = urlsplit(base)
        self._origin = (parts.scheme, parts.netloc)
        self.address = f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"

    def call(self, method: str, path: str, body: object = None,
             query: Mapping[str, str] | None = None) -> Reply:
        """``method`` on ``base + path``; a JSON body in and out."""
        url = self.base + path + (f"?{urlencode(query)}" if query else "")
        return self.fetch(method, url, body)

    def pages(self, path: str, query: Mapping[str, str],
              next_url: Callable[[Reply], str | None]) -> Iterator[Any]:
        """Every item of a paginated list, page after page until ``next_url`` says none."""
        reply = self.call("GET", path, query=query)
        while True:
            if not isinstance(reply.body, list):
                raise self._bad(reply, "answered with something that is not a list")
            yield from reply.body
            url = next_url(reply)
            if url is None:
                return
            parts = urlsplit(url)
            if (parts.scheme, parts.netloc) != self._origin:
                raise self._bad(reply, f"points to its next page on another host "
                                f"({parts.hostname}); the token is not sent there")
            reply = self.fetch("GET", url)

    def need(self, reply: Reply, method: str, **fields: type) -> dict[str, Any]:
        """The answer's object, which must have these fields of these types."""
        body = reply.body
        if not isinstance(body, dict) or any(not isinstance(body.get(name), kind)
                                             for name, kind in fields.items()):
            raise self._bad(reply, f"answered without {' and '.join(fields)}", method)
        return body

    def fetch(self, method: str, url: str, body: object = None) -> Reply:
        data = None if body is None else json.dumps(body).encode()
        headers = {**self._headers, **({"Content-Type": "application/json"} if data else {})}
        request = urllib.request.Request(url, data, headers, method=method)
        try:
            with self._opener.open(request, timeout=self.timeout) as answer:
                return self._decode(method, url, answer.status, answer.read(), answer.headers)
        except urllib.error.HTTPError as err:
            raise self._refused(method, url, err) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
            raise UserError([HINTS.problem(
                UNREACHABLE, f"{method} {_shown(url)}: cannot reach {self.address}: "
                f"{self._why(err)}", self.label,
                f"check {self._variable} and that this runner may reach {self.address}")]) from None

    def _decode(self, method: str, url: str, status: int, raw: bytes,
                headers: Mapping[str, str]) -> Reply:
        try:
            return Reply(url, status, json.loads(raw) if raw else None, headers)
        except ValueError:
            kind = headers.get("Content-Type") or "no content type"
            raise self._bad(Reply(url, status, None, headers), f"answered {status} with "
                            f"something that is not JSON ({kind})", method) from None

    def _refused(self, method: str, url: str, err: urllib.error.HTTPError) -> UserError:
        """An error answer as a Problem: the forge explains 4xx; 3xx and 5xx are ours."""
        try:
            said = self._said(json.loads(err.read() or b"null"))
        except (ValueError, OSError):
            said = ""
        status = err.code
        phrase = _phrase(status)
        message = f"{method} {_shown(url)} answered {status} {phrase}" + \
            (f": {said}" if said else "")
        if 300 <= status < 400:
            where = err.headers.get("Location", "")
            return UserError([HINTS.problem(
                BAD_ANSWER, f"{message}, a redirect to {_shown(where)}", self.label,
                f"set {self._variable} to the API's own address; xce-pr does not follow "
                "redirects, so the token goes only where it is set")])
        code = DENIED if status in (401, 403) else NOT_FOUND if status == 404 else \
            REFUSED if status < 500 else BAD_ANSWER
        hint = self._explain(Failure(method, _shown(url), status, said))
        return UserError([Problem(code, message, hint, subject=self.label)])

    def _bad(self, reply: Reply, what: str, method: str = "GET") -> UserError:
        return UserError([HINTS.problem(BAD_ANSWER, f"{method} {_shown(reply.url)} {what}",
                                        self.label)])

    def _said(self, body: Any) -> str:
        """The forge's message in an error body: GitHub's ``message`` and ``errors``,
        GitLab's ``message`` (a text or a field → reasons map) or ``error``."""
        if not isinstance(body, dict):
            return ""
        errors = body.get("errors")
        parts = [body.get("message"), body.get("error"),
                 *(e.get("message") if isinstance(e, dict) else e
                   for e in (errors if isinstance(errors, list) else []))]
        text = "; ".join(p if isinstance(p, str) else json.dumps(p) for p in parts if p)
        text = self._redact.text(" ".join(text.split()))
        return text if len(text) <= SAID_CHARS else text[:SAID_CHARS] + "…"

    def _why(self, err: BaseException) -> str:
        reason = err.reason if isinstance(err, urllib.error.URLError) else err
        if isinstance(reason, TimeoutError):
            return f"no answer within {self.timeout:g} s"
        if isinstance(reason, ConnectionRefusedError):
            return "connection refused (nothing listens there)"
        if isinstance(reason, socket.gaierror):
            return f"unknown host ({reason.strerror})"
        if isinstance(reason, ssl.SSLCertVerificationError):
            return f"its certificate is not trusted ({reason.verify_message})"
        if isinstance(reason, http.client.RemoteDisconnected | ConnectionResetError):
            return "it closed the connection without answering"
        text = getattr(reason, "strerror", None) or str(reason) or type(reason).__name__
        return self._redact.text(text)


def link_next(reply: Reply) -> str | None:
    """The ``rel="next"`` URL of a ``Link`` header (RFC 8288), as GitHub paginates."""
    for url, rel in _LINK.findall(reply.headers.get("Link") or ""):
        if "next" in rel.split():
            return str(url)
    return None


def next_page(reply: Reply) -> str | None:
    """The same URL with ``page`` from ``X-Next-Page`` (empty on the last page), as GitLab
    paginates."""
    page = (reply.headers.get("X-Next-Page") or "").strip()
    if not page.isdigit():
        return None
    parts = urlsplit(reply.url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "page"] + [("page", page)]
    return urlunsplit(parts._replace(query=urlencode(query)))


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _shown(url: str) -> str:
    """A URL as it may be shown: no user name or password in it."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    return urlunsplit(parts._replace(netloc=host + (f":{parts.port}" if parts.port else "")))
