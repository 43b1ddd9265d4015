"""A test double of GitHub's and GitLab's REST APIs: the endpoints xce-pr calls, on 127.0.0.1.

Not GitHub and not GitLab: a real HTTP server (http.server's ThreadingHTTPServer in a thread)
that answers as the forges document it, so the client is tested over a real socket — paths,
auth headers, pagination (GitHub's ``Link`` header pointing at ``/repositories/{id}/…`` as
GitHub's does; GitLab's ``X-Next-Page``), the body limits, and the JSON error bodies with
401/403/404/422. It accepts one token, records every request and comment, can be seeded with
other people's comments and told to fail a request.

- GitHub (``github_url``, the value for ``GITHUB_API_URL``): ``GET``/``POST
  /repos/{o}/{r}/issues/{n}/comments`` (``per_page`` ≤ 100, default 30, ``page``), ``PATCH
  /repos/{o}/{r}/issues/comments/{id}``, ``GET /repos/{o}/{r}/commits/{sha}/pulls``.
  Auth: ``Authorization: Bearer …`` or ``token …``.
- GitLab (``gitlab_url``, the value for ``CI_API_V4_URL``): ``GET``/``POST
  /projects/{id}/merge_requests/{iid}/notes`` (``per_page`` ≤ 100, default 20, ``page``;
  newest first unless ``sort=asc``), ``PUT …/notes/{note_id}`` (the author's own notes only:
  403 otherwise), ``GET /projects/{id}/repository/commits/{sha}/merge_requests``. Auth:
  ``PRIVATE-TOKEN``, ``Authorization: Bearer``, or ``JOB-TOKEN`` — which, as on GitLab, these
  endpoints ignore (401) unless ``job_token_allowed=True``.

Every pull request exists unless ``strict=True``: then only those declared (``add_pull``,
``link_commit``, ``seed``) do, and others answer 404 as the forges do.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

GITHUB, GITLAB = "github", "gitlab"
GITHUB_PREFIX, GITLAB_PREFIX = "/github", "/gitlab/api/v4"
GITHUB_BODY_LIMIT, GITLAB_BODY_LIMIT = 65_536, 1_000_000
BOT = {GITHUB: "github-actions[bot]", GITLAB: "project_7_bot"}  # whom the token speaks for
DOCS = "https://docs.github.com/rest"
_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
_STATES = {GITHUB: {"open": "open", "merged": "closed", "closed": "closed"},
           GITLAB: {"open": "opened", "merged": "merged", "closed": "closed"}}


@dataclass
class RecordedComment:
    """A comment as the double holds it; ``created`` is the double's clock (1, 2, …)."""

    id: int
    body: str
    created: int
    updates: int = 0
    author: str = ""
    system: bool = False  # a GitLab system note ("added 1 commit"): nobody's comment
    updated: int = 0  # the clock at the last change


@dataclass(frozen=True)
class Request:
    """One request as received; ``auth`` is the scheme used (``Bearer``, ``PRIVATE-TOKEN``…)."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    auth: str


@dataclass
class _Failure:
    status: int
    message: str | None
    method: str | None
    path: str | None
    times: int
    headers: dict[str, str]


@dataclass
class _Reply:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


Key = tuple[str, str, int]  # (forge, repo or project id, pull/merge request number)
Route = tuple[str, re.Pattern[str], Callable[..., _Reply]]


class ForgeDouble:
    """A test double of GitHub's and GitLab's REST APIs; use it as a context manager."""

    def __init__(self, *, strict: bool = False, job_token_allowed: bool = False) -> None:
        self.token = "xce_" + secrets.token_hex(16)  # the only token it accepts (either forge)
        self.strict = strict
        self.job_token_allowed = job_token_allowed
        self.requests: list[tuple[str, str]] = []  # (method, path) in order
        self.log: list[Request] = []
        self._lock = threading.Lock()
        self._clock = 0
        self._next_id = 1000
        self._comments: dict[Key, list[RecordedComment]] = {}
        self._pulls: dict[Key, str] = {}  # → "open" | "merged" | "closed"
        self._commits: dict[tuple[str, str, str], list[int]] = {}
        self._repo_ids: dict[str, int] = {}
        self._failures: list[_Failure] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.double = self  # type: ignore[attr-defined]
        self.port = self._server.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.github_url = self.base + GITHUB_PREFIX
        self.gitlab_url = self.base + GITLAB_PREFIX
        self.web_url = self.base + "/web"  # where html_url / web_url point (never served)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        daemon=True)  # polls for shutdown every 50 ms

    def __enter__(self) -> ForgeDouble:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    # -- what a test sets up and reads -------------------------------------------------------

    def comments(self, forge: str, repo: str, number: int) -> list[RecordedComment]:
        """The comments of one pull/merge request, oldest first (copies)."""
        with self._lock:
            return [replace(c) for c in self._comments.get((forge, repo, number), [])]

    def add_pull(self, forge: str, repo: str, number: int, state: str = "open") -> None:
        """Declare a pull request (``open``, ``merged`` or ``closed``)."""
        assert state in _STATES[forge], state
        with self._lock:
            self._pulls[(forge, repo, number)] = state

    def link_commit(self, forge: str, repo: str, sha: str, number: int,
                    state: str = "open") -> None:
        """What ``commits/{sha}/pulls`` (GitLab: ``…/merge_requests``) answers: add ``number``."""
        self.add_pull(forge, repo, number, state)
        with self._lock:
            self._commits.setdefault((forge, repo, sha.lower()), []).append(number)

    def seed(self, forge: str, repo: str, number: int, bodies: Iterable[str],
             author: str = "someone-else", system: bool = False) -> list[int]:
        """Comments by other people (or GitLab system notes) already on the pull request."""
        with self._lock:
            self._pulls.setdefault((forge, repo, number), "open")
            return [self._add(forge, repo, number, body, author, system).id for body in bodies]

    def fail(self, status: int, message: str | None = None, *, method: str | None = None,
             path: str | None = None, times: int = 1,
             headers: dict[str, str] | None = None) -> None:
        """Answer the next ``times`` requests matching ``method`` and a ``path`` substring with
        ``status`` and the forge's error body (``message`` defaults to the forge's usual), plus
        ``headers`` (e.g. a redirect's ``Location``)."""
        with self._lock:
            self._failures.append(_Failure(status, message, method, path, times,
                                           dict(headers or {})))

    # -- serving ------------------------------------------------------------------------------

    def answer(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> _Reply:
        """One request's reply: failures first, then auth, then the route."""
        split = urlsplit(target)
        path, query = split.path, dict(parse_qsl(split.query))
        forge = GITHUB if path.startswith(GITHUB_PREFIX + "/") else \
            GITLAB if path.startswith(GITLAB_PREFIX + "/") else None
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = ValueError
        with self._lock:
            self.requests.append((method, path))
            auth, value = _credential(forge, headers)
            self.log.append(Request(method, path, query, headers, body, auth))
            if forge is None:
                return _Reply(404, {"message": "Not Found"})
            failure = self._take_failure(method, path)
            if failure is not None:
                reply = _error(forge, failure.status, failure.message)
                reply.headers.update(failure.headers)
                return reply
            denied = self._authenticate(forge, auth, value)
            if denied is not None:
                return denied
            if body is ValueError:
                return _error(forge, 400, "Problems parsing JSON" if forge == GITHUB else None)
            rest = path[len(GITHUB_PREFIX if forge == GITHUB else GITLAB_PREFIX):]
            return self._route(forge, method, rest, query, body, headers.get("host", ""))

    def _take_failure(self, method: str, path: str) -> _Failure | None:
        for failure in self._failures:
            if (failure.method in (None, method)) and (failure.path is None
                                                        or failure.path in path):
                failure.times -= 1
                if failure.times <= 0:
                    self._failures.remove(failure)
                return failure
        return None

    def _authenticate(self, forge: str, auth: str, value: str) -> _Reply | None:
        if forge == GITHUB:
            if not auth:
                return _error(forge, 401, "Requires authentication")
            return None if value == self.token else _error(forge, 401, "Bad credentials")
        if auth == "JOB-TOKEN" and not self.job_token_allowed:
            return _error(forge, 401)  # GitLab ignores a job token where it is not allowed
        return None if auth and value == self.token else _error(forge, 401)

    def _route(self, forge: str, method: str, path: str, query: dict[str, str], body: Any,
               host: str) -> _Reply:
        for verb, pattern, handler in self._routes(forge):
            match = pattern.fullmatch(path)
            if match and verb == method:
                args = {k: unquote(v) for k, v in match.groupdict().items()}
                return handler(query=query, body=body, host=host, **args)
        return _error(forge, 404)

    def _routes(self, forge: str) -> list[Route]:
        repo = r"/repos/(?P<repo>[^/]+/[^/]+)"
        project = r"/projects/(?P<repo>[^/]+)"
        if forge == GITHUB:
            return [("GET", re.compile(repo + r"/issues/(?P<number>\d+)/comments"), self._gh_list),
                    ("GET", re.compile(r"/repositories/(?P<repo_id>\d+)/issues/(?P<number>\d+)"
                                       r"/comments"), self._gh_list),
                    ("POST", re.compile(repo + r"/issues/(?P<number>\d+)/comments"),
                     self._gh_create),
                    ("PATCH", re.compile(repo + r"/issues/comments/(?P<id>\d+)"), self._gh_update),
                    ("GET", re.compile(repo + r"/commits/(?P<sha>[0-9A-Fa-f]+)/pulls"),
                     partial(self._pulls_of, GITHUB))]
        notes = project + r"/merge_requests/(?P<number>\d+)/notes"
        return [("GET", re.compile(notes), self._gl_list),
                ("POST", re.compile(notes), self._gl_create),
                ("PUT", re.compile(notes + r"/(?P<id>\d+)"), self._gl_update),
                ("GET", re.compile(project + r"/repository/commits/(?P<sha>[0-9A-Fa-f]+)"
                                   r"/merge_requests"), partial(self._pulls_of, GITLAB))]

    # -- the state behind the routes ----------------------------------------------------------

    def _add(self, forge: str, repo: str, number: int, body: str, author: str,
             system: bool = False) -> RecordedComment:
        self._clock += 1
        self._next_id += 1
        comment = RecordedComment(self._next_id, body, self._clock, 0, author, system,
                                  self._clock)
        self._comments.setdefault((forge, repo, number), []).append(comment)
        return comment

    def _missing(self, forge: str, repo: str, number: int) -> _Reply | None:
        """The forge's 404 when strict and the repository or pull request is not declared."""
        if not self.strict or (forge, repo, number) in self._pulls:
            return None
        known = any(key[:2] == (forge, repo) for key in self._pulls)
        if forge == GITHUB:
            return _error(forge, 404)
        return _error(forge, 404, "404 Not found" if known else "404 Project Not Found")

    def _find(self, forge: str, repo: str, number: int | None, ident: int
              ) -> tuple[Key, RecordedComment] | None:
        for key, items in self._comments.items():
            if key[:2] == (forge, repo) and number in (None, key[2]):
                for comment in items:
                    if comment.id == ident:
                        return key, comment
        return None

    def _pulls_of(self, forge: str, repo: str, sha: str, query: dict[str, str], body: Any,
                  host: str) -> _Reply:
        numbers = self._commits.get((forge, repo, sha.lower()), [])
        if forge == GITHUB:
            return _Reply(200, [_gh_pull(self, repo, n, self._pulls[(forge, repo, n)])
                                for n in numbers])
        if self.strict and not any(key[:2] == (forge, repo) for key in self._pulls):
            return _error(forge, 404, "404 Project Not Found")
        return _Reply(200, [_gl_merge_request(self, repo, n, self._pulls[(forge, repo, n)])
                            for n in numbers])

    # -- GitHub -------------------------------------------------------------------------------

    def _repo_id(self, repo: str) -> int:
        return self._repo_ids.setdefault(repo, 500_000 + len(self._repo_ids))

    def _gh_list(self, number: str, query: dict[str, str], body: Any, host: str,
                 repo: str | None = None, repo_id: str | None = None) -> _Reply:
        if repo is None:
            names = [name for name, ident in self._repo_ids.items() if str(ident) == repo_id]
            if not names:
                return _error(GITHUB, 404)
            repo = names[0]
        missing = self._missing(GITHUB, repo, int(number))
        if missing is not None:
            return missing
        per_page, page = _paging(query, 30)
        items = self._comments.get((GITHUB, repo, int(number)), [])
        chunk = items[(page - 1) * per_page:page * per_page]
        last = max(1, -(-len(items) // per_page))
        where = f"http://{host}{GITHUB_PREFIX}/repositories/{self._repo_id(repo)}/issues/{number}"
        links = {rel: p for rel, p in (("prev", page - 1), ("next", page + 1), ("last", last),
                                       ("first", 1)) if 1 <= p <= last and p != page}
        link = ", ".join(f'<{where}/comments?per_page={per_page}&page={p}>; rel="{rel}"'
                         for rel, p in links.items())
        return _Reply(200, [_gh_comment(self, repo, int(number), c) for c in chunk],
                      {"Link": link} if link else {})

    def _gh_create(self, repo: str, number: str, query: dict[str, str], body: Any,
                   host: str) -> _Reply:
        invalid = self._missing(GITHUB, repo, int(number)) or _gh_invalid(body)
        if invalid is not None:
            return invalid
        comment = self._add(GITHUB, repo, int(number), body["body"], BOT[GITHUB])
        return _Reply(201, _gh_comment(self, repo, int(number), comment))

    def _gh_update(self, repo: str, id: str, query: dict[str, str], body: Any,
                   host: str) -> _Reply:
        found = self._find(GITHUB, repo, None, int(id))
        if found is None:
            return _error(GITHUB, 404)
        invalid = _gh_invalid(body)
        if invalid is not None:
            return invalid
        key, comment = found
        _change(self, comment, body["body"])
        return _Reply(200, _gh_comment(self, repo, key[2], comment))

    # -- GitLab -------------------------------------------------------------------------------

    def _gl_list(self, repo: str, number: str, query: dict[str, str], body: Any,
                 host: str) -> _Reply:
        missing = self._missing(GITLAB, repo, int(number))
        if missing is not None:
            return missing
        per_page, page = _paging(query, 20)
        order = "updated" if query.get("order_by") == "updated_at" else "created"
        items = sorted(self._comments.get((GITLAB, repo, int(number)), []),
                       key=lambda c: (getattr(c, order), c.id),
                       reverse=query.get("sort", "desc") != "asc")
        chunk = items[(page - 1) * per_page:page * per_page]
        pages = max(1, -(-len(items) // per_page))
        headers = {"X-Page": str(page), "X-Per-Page": str(per_page), "X-Total": str(len(items)),
                   "X-Total-Pages": str(pages),
                   "X-Next-Page": str(page + 1) if page < pages else "",
                   "X-Prev-Page": str(page - 1) if 1 < page <= pages + 1 else ""}
        return _Reply(200, [_gl_note(repo, int(number), c) for c in chunk], headers)

    def _gl_create(self, repo: str, number: str, query: dict[str, str], body: Any,
                   host: str) -> _Reply:
        invalid = self._missing(GITLAB, repo, int(number)) or _gl_invalid(body)
        if invalid is not None:
            return invalid
        note = self._add(GITLAB, repo, int(number), body["body"], BOT[GITLAB])
        return _Reply(201, _gl_note(repo, int(number), note))

    def _gl_update(self, repo: str, number: str, id: str, query: dict[str, str], body: Any,
                   host: str) -> _Reply:
        missing = self._missing(GITLAB, repo, int(number))
        if missing is not None:
            return missing
        found = self._find(GITLAB, repo, int(number), int(id))
        if found is None:
            return _error(GITLAB, 404, "404 Not found")
        if found[1].author != BOT[GITLAB]:
            return _error(GITLAB, 403)  # only a note's author may change it
        invalid = _gl_invalid(body)
        if invalid is not None:
            return invalid
        _change(self, found[1], body["body"])
        return _Reply(200, _gl_note(repo, int(number), found[1]))


class _Handler(BaseHTTPRequestHandler):
    """Hands each request to the double; JSON in, JSON out."""

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        double: ForgeDouble = self.server.double  # type: ignore[attr-defined]
        reply = double.answer(self.command, self.path, headers, raw)
        payload = json.dumps(reply.body).encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the double's ``log`` holds what a test needs."""


def _credential(forge: str | None, headers: dict[str, str]) -> tuple[str, str]:
    """The auth scheme and token a request carries, as each forge reads its headers."""
    scheme, _, value = headers.get("authorization", "").partition(" ")
    if forge == GITHUB and scheme.lower() in ("bearer", "token") and value:
        return scheme, value
    if forge == GITLAB:
        for name in ("private-token", "job-token"):
            if headers.get(name):
                return name.upper(), headers[name]
        if scheme.lower() == "bearer" and value:
            return scheme, value
    return "", ""


def _error(forge: str, status: int, message: str | None = None) -> _Reply:
    """The forge's JSON error body: GitHub's message + documentation_url, GitLab's message."""
    phrase = HTTPStatus(status).phrase
    if forge == GITHUB:
        usual = {401: "Bad credentials", 403: "Resource not accessible by integration",
                 404: "Not Found", 422: "Validation Failed", 500: "Server Error"}
        return _Reply(status, {"message": message or usual.get(status, phrase),
                               "documentation_url": DOCS, "status": str(status)})
    return _Reply(status, {"message": message or f"{status} {phrase}"})


def _paging(query: dict[str, str], default: int) -> tuple[int, int]:
    """``per_page`` (at most 100, as both forges cap it) and ``page`` (from 1)."""
    def number(name: str, fallback: int) -> int:
        value = query.get(name, "")
        return int(value) if value.isdigit() and int(value) > 0 else fallback
    return min(number("per_page", default), 100), number("page", 1)


def _stamp(clock: int) -> str:
    return (_EPOCH + timedelta(seconds=clock)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _change(double: ForgeDouble, comment: RecordedComment, body: str) -> None:
    double._clock += 1
    comment.body, comment.updates, comment.updated = body, comment.updates + 1, double._clock


def _gh_invalid(body: Any) -> _Reply | None:
    if not isinstance(body, dict) or not isinstance(body.get("body"), str):
        return _error(GITHUB, 422, 'Invalid request.\n\n"body" wasn\'t supplied.')
    if len(body["body"]) > GITHUB_BODY_LIMIT:
        reply = _error(GITHUB, 422)
        reply.body["errors"] = [{"resource": "IssueComment", "code": "unprocessable",
                                 "field": "data", "message": "Body is too long (maximum is "
                                 f"{GITHUB_BODY_LIMIT} characters)"}]
        return reply
    return None


def _gl_invalid(body: Any) -> _Reply | None:
    if not isinstance(body, dict) or not isinstance(body.get("body"), str) or not body["body"]:
        return _Reply(400, {"error": "body is missing"})
    if len(body["body"]) > GITLAB_BODY_LIMIT:
        return _Reply(400, {"message": {"note": [
            f"is too long (maximum is {GITLAB_BODY_LIMIT} characters)"]}})
    return None


def _gh_comment(double: ForgeDouble, repo: str, number: int, c: RecordedComment
                ) -> dict[str, Any]:
    api = f"{double.github_url}/repos/{repo}"
    return {"id": c.id, "node_id": f"IC_{c.id}", "url": f"{api}/issues/comments/{c.id}",
            "html_url": f"{double.web_url}/{repo}/pull/{number}#issuecomment-{c.id}",
            "issue_url": f"{api}/issues/{number}", "body": c.body,
            "user": {"login": c.author, "type": "Bot" if "[bot]" in c.author else "User"},
            "created_at": _stamp(c.created), "updated_at": _stamp(c.updated),
            "author_association": "NONE"}


def _gl_note(project: str, iid: int, c: RecordedComment) -> dict[str, Any]:
    return {"id": c.id, "type": None, "body": c.body, "attachment": None,
            "author": {"username": c.author, "name": c.author},
            "created_at": _stamp(c.created), "updated_at": _stamp(c.updated),
            "system": c.system, "noteable_id": 90_000 + iid, "noteable_type": "MergeRequest",
            "noteable_iid": iid, "project_id": project, "resolvable": False,
            "confidential": False, "internal": False}


def _gh_pull(double: ForgeDouble, repo: str, number: int, state: str) -> dict[str, Any]:
    return {"number": number, "state": _STATES[GITHUB][state], "title": f"PR {number}",
            "html_url": f"{double.web_url}/{repo}/pull/{number}",
            "merged_at": _stamp(0) if state == "merged" else None}


def _gl_merge_request(double: ForgeDouble, project: str, iid: int, state: str
                      ) -> dict[str, Any]:
    return {"id": 90_000 + iid, "iid": iid, "project_id": project, "title": f"MR {iid}",
            "state": _STATES[GITLAB][state],
            "web_url": f"{double.web_url}/{project}/-/merge_requests/{iid}"}
