"""``nami approvals serve``: a small web page to answer the approvals queue from, and the JSON the page and
``nami approvals --url`` read and post.

An answer given here is written to the queue exactly as ``nami approvals approve|deny`` writes it
(approvals/answering.py ``give``): as the OS user who started the server, and, with a named approver's token,
as that approver; the run checks it as it checks any answer. What this server adds is who may make it
write one:

- **The page token.** A random token made at each start is in the URL the server prints (as Jupyter's).
  The page's script keeps it in the tab's ``sessionStorage`` (of this origin: this port alone), drops it
  from the address bar, and sends it as ``Authorization: Bearer`` with every request. No cookie: a browser
  sends a cookie of 127.0.0.1 to every port of it, so any other server there (another user's, or one a
  tool started) would get the page's session with it; and another site cannot make a browser send an
  ``Authorization`` header (that needs a CORS preflight, which this server never grants). Without the
  token (or an approver's) nothing is shown and nothing answered.
- **Host and Origin.** Every request must name, in ``Host``, an address the server is bound to, on its port
  (or a name given with ``--allow-host``, the team's proxy): a page whose DNS name was rebound to 127.0.0.1
  is refused. A POST from a browser must carry an ``Origin`` of those names.
- **Remote** (``--allow-remote``): each answer also needs a named approver's token (``approvals.approvers``),
  typed by the person or given as ``Authorization: Bearer`` by ``nami approvals --url``; it is checked
  here against the listed hashes (403 when it is none of them) and again by the run.
- **Back-off** (:class:`Backoff`): wrong tokens are counted per client address and over all clients; past a
  few, every token is refused unseen (429, ``Retry-After``) for a time that doubles with each further wrong
  one. An approver's token chosen by a person can then not be guessed at the speed of the network.

Everything shown is the queue entry as ``nami approvals --json`` shows it (approvals/listing.py): written
redacted by the run, as the audit log is.
"""

from __future__ import annotations

import contextlib
import hmac
import http.server
import json
import os
import secrets
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from importlib import resources
from typing import Any

from nami_yaml.approvals.answering import find, give
from nami_yaml.approvals.listing import approver_named, entries, shown
from nami_yaml.approvals.store import ApprovalRefused, QueueFolder, user_name
from nami_yaml.display import safe_json
from nami_yaml.errors import NamiError
from nami_yaml.serve.hosts import served_names

MAX_BODY = 64 * 1024
IDLE_TIMEOUT = 10.0  # seconds a connection may wait between bytes of its request (slowloris: each holds a thread)
LABEL = "approvals page"
ASSETS = {"/page.js": ("page.js", "text/javascript; charset=utf-8"),
          "/page.css": ("page.css", "text/css; charset=utf-8")}
HEADERS = {
    # Only the page's own files; no framing (clickjacking), no referrer (the URL once held the token).
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                               "img-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


@dataclass
class _Wrong:
    count: int = 0
    last: float = 0.0


@dataclass
class Backoff:
    """Wrong tokens per client address, and over all clients (a team's proxy is one address for all; and an
    attacker may have many). Past ``free`` wrong tokens from a client (``free_all`` from all), tokens from
    it (from anyone) are refused unseen for ``first`` seconds, doubled at each further wrong one, up to
    ``longest``; a count is forgotten ``forget`` seconds after its last wrong token. The cost, said in
    docs/security.md: whoever makes enough wrong guesses keeps everyone out for a while (never for good)."""

    free: int = 5
    free_all: int = 50
    first: float = 30.0  # a person who mistyped five times waits half a minute
    longest: float = 900.0
    forget: float = 3600.0
    most_clients: int = 10_000  # clients remembered; the oldest are forgotten first (the global count stays)
    _clients: dict[str, _Wrong] = field(default_factory=dict)
    _all: _Wrong = field(default_factory=_Wrong)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def wait(self, client: str, now: float) -> float:
        """Seconds before ``client`` may present a token again (0: now)."""
        with self._lock:
            mine = self._clients.get(client)
            return max(self._locked(mine, self.free, now) if mine is not None else 0.0,
                       self._locked(self._all, self.free_all, now))

    def wrong(self, client: str, now: float) -> None:
        """``client`` presented a wrong token."""
        with self._lock:
            if len(self._clients) >= self.most_clients and client not in self._clients:
                oldest = min(self._clients, key=lambda name: self._clients[name].last)
                del self._clients[oldest]
            for count in (self._clients.setdefault(client, _Wrong()), self._all):
                if now - count.last > self.forget:
                    count.count = 0
                count.count += 1
                count.last = now

    def _locked(self, wrong: _Wrong, free: int, now: float) -> float:
        if wrong.count < free or now - wrong.last > self.forget:
            return 0.0
        return max(0.0, wrong.last + min(self.longest, self.first * 2 ** (wrong.count - free)) - now)


@dataclass
class PageServer:
    """What the handlers share: the queue, who may answer, the page token and the signed-in browsers."""

    folder: QueueFolder
    approvers: Mapping[str, str]
    remote: bool
    hosts: set[str]  # what Host may say: "name:port" for the served names, or an --allow-host name
    origins: set[str]
    page_token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    backoff: Backoff = field(default_factory=Backoff)


@dataclass(frozen=True)
class Caller:
    """Who a request comes from: the page (a browser's or a program's) with the page token as a bearer token,
    or a program with a named approver's."""

    approver_token: str | None = None


def allowed_names(host: str, port: int, allowed: Sequence[str]) -> tuple[set[str], set[str]]:
    """The Host values and Origins a request may carry: the served names on the served port, and each
    ``--allow-host`` name as it is (a proxy's name, any port it forwards from)."""
    names = served_names(host)
    hosts = {f"{name}:{port}" for name in names}
    origins = {f"{scheme}://{name}:{port}" for name in names for scheme in ("http", "https")}
    for name in (item.lower() for item in allowed):
        hosts.add(name)
        origins.update({f"https://{name}", f"http://{name}"})
    return hosts, origins


class Handler(http.server.BaseHTTPRequestHandler):
    server_version = "nami-approvals"
    timeout = IDLE_TIMEOUT  # socket reads and writes of one request; not the wait for the run's receipt
    page: PageServer  # set on the subclass made for one server

    # -- plumbing ----------------------------------------------------------------------------------------

    def version_string(self) -> str:
        return self.server_version

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        pass  # the page polls every 2 s: no access log on the terminal

    def send(self, status: int, body: bytes, content_type: str, headers: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in {**HEADERS, **(headers or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_json(self, status: int, value: Any) -> None:
        self.send(status, (safe_json(value) + "\n").encode(), "application/json; charset=utf-8")

    def refuse(self, status: int, message: str) -> None:
        self.send_json(status, {"error": message})

    def host_ok(self) -> bool:
        host = (self.headers.get("Host") or "").strip().lower()
        if host in self.page.hosts:
            return True
        self.refuse(HTTPStatus.MISDIRECTED_REQUEST, "this page is not served under that name (Host)")
        return False

    def may_try(self) -> bool:
        """Whether this client may present a token now; else 429 was sent (Backoff)."""
        wait = self.page.backoff.wait(self.client_address[0], time.monotonic())
        if wait <= 0:
            return True
        seconds = max(1, int(wait + 0.999))
        self.send(HTTPStatus.TOO_MANY_REQUESTS, (safe_json({
            "error": f"too many wrong tokens: no token is looked at for {seconds}s"}) + "\n").encode(),
            "application/json; charset=utf-8", {"Retry-After": str(seconds)})
        return False

    def wrong_token(self) -> None:
        self.page.backoff.wrong(self.client_address[0], time.monotonic())

    def caller(self) -> Caller | None:
        """Who asks, or None (then 401, or 429 after too many wrong tokens, was sent)."""
        authorization = self.headers.get("Authorization") or ""
        if authorization.startswith("Bearer "):
            if not self.may_try():
                return None
            token = authorization[len("Bearer "):].strip()
            if hmac.compare_digest(token.encode(), self.page.page_token.encode()):
                return Caller()
            if approver_named(token, self.page.approvers) is not None:
                return Caller(approver_token=token)
            self.wrong_token()
        self.send(HTTPStatus.UNAUTHORIZED, b"Open the URL `nami approvals serve` printed (it holds the page's "
                  b"token), or give a token as `Authorization: Bearer`.\n", "text/plain; charset=utf-8",
                  {"WWW-Authenticate": "Bearer"})
        return None

    # -- GET -----------------------------------------------------------------------------------------------

    def do_HEAD(self) -> None:  # noqa: N802 (the base class's name)
        self.do_GET()

    def do_GET(self) -> None:  # noqa: N802
        if not self.host_ok():
            return
        url = urllib.parse.urlsplit(self.path)
        if url.path in ASSETS:
            name, content_type = ASSETS[url.path]
            self.send(HTTPStatus.OK, asset(name), content_type)
            return
        if url.path == "/":
            self.index(urllib.parse.parse_qs(url.query).get("token", [""])[0])
            return
        caller = self.caller()
        if caller is None:
            return
        if url.path == "/api/approvals":
            show_all = urllib.parse.parse_qs(url.query).get("all", [""])[0] == "1"
            self.send_json(HTTPStatus.OK, {"approvals": entries(self.page.folder, show_all=show_all),
                                           **self.about()})
            return
        approval_id = api_id(url.path)
        if approval_id is None:
            self.refuse(HTTPStatus.NOT_FOUND, "no such page")
            return
        try:
            self.send_json(HTTPStatus.OK, shown(find(self.page.folder, approval_id)))
        except ApprovalRefused as exc:
            self.refuse(HTTPStatus.NOT_FOUND, str(exc))

    def about(self) -> dict[str, Any]:
        return {"remote": self.page.remote, "user": user_name(os.getuid()), "approvers": bool(self.page.approvers),
                "queue": str(self.page.folder.path)}

    def index(self, token: str) -> None:
        """The page itself: nothing in it is secret (its script takes the token from the address bar, once,
        into the tab's sessionStorage); a wrong token is said at once."""
        if token and not self.may_try():
            return
        if token and not hmac.compare_digest(token.encode(), self.page.page_token.encode()):
            self.wrong_token()
            self.send(HTTPStatus.FORBIDDEN, b"This is not the page's token (it changes at each start of "
                      b"`nami approvals serve`).\n", "text/plain; charset=utf-8")
            return
        html = asset("index.html").decode().replace("{{mode}}", "remote" if self.page.remote else "local")
        self.send(HTTPStatus.OK, html.encode(), "text/html; charset=utf-8")

    # -- POST ----------------------------------------------------------------------------------------------

    def do_POST(self) -> None:  # noqa: N802
        if not self.host_ok():
            return
        caller = self.caller()
        if caller is None:
            return
        if not self.origin_ok():
            return
        path = urllib.parse.urlsplit(self.path).path
        approval_id, _, verb = path.removeprefix("/api/approvals/").partition("/")
        if not path.startswith("/api/approvals/") or verb not in ("approve", "deny"):
            self.refuse(HTTPStatus.NOT_FOUND, "answer at /api/approvals/ID/approve or /api/approvals/ID/deny")
            return
        body = self.json_body()
        if body is None:
            return
        reason = body.get("reason")
        reason = " ".join(reason.split()) if isinstance(reason, str) and reason.strip() else None
        if verb == "deny" and reason is None:
            self.refuse(HTTPStatus.BAD_REQUEST, "a deny needs a reason: the model is told")
            return
        token = body.get("approver_token") if isinstance(body.get("approver_token"), str) else None
        token = (token or "").strip() or caller.approver_token
        if token is not None and approver_named(token, self.page.approvers) is None:
            self.wrong_token()
            self.refuse(HTTPStatus.FORBIDDEN, "that token is not one of approvals.approvers: nothing was answered")
            return
        if self.page.remote and token is None:
            self.refuse(HTTPStatus.FORBIDDEN, "this page answers only with a named approver's token "
                                              "(approvals.approvers): sign in with yours")
            return
        env = {"NAMI_APPROVER": LABEL, **({"NAMI_APPROVER_TOKEN": token} if token else {})}
        try:
            given = give(self.page.folder, approval_id, approve=verb == "approve", reason=reason, env=env)
        except ApprovalRefused as exc:
            self.refuse(HTTPStatus.CONFLICT, str(exc))
            return
        except NamiError as exc:
            self.refuse(HTTPStatus.INTERNAL_SERVER_ERROR, str(exc))
            return
        self.send_json(HTTPStatus.OK, {"id": approval_id, "message": given.message})

    def origin_ok(self) -> bool:
        """A browser's POST (it says its Origin) comes from the page's own origin; a program says none."""
        origin = self.headers.get("Origin")
        if origin is None or origin.lower() in self.page.origins:
            return True
        self.refuse(HTTPStatus.FORBIDDEN, "an answer must come from this page (Origin): nothing was answered")
        return False

    def json_body(self) -> dict[str, Any] | None:
        if (self.headers.get("Content-Type") or "").split(";")[0].strip().lower() != "application/json":
            self.refuse(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "send the answer as application/json")
            return None
        try:
            length = int(self.headers.get("Content-Length") or "0")
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY:
            self.refuse(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"an answer is at most {MAX_BODY} bytes")
            return None
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self.refuse(HTTPStatus.BAD_REQUEST, "the answer is not a JSON object")
            return None
        return body


def api_id(path: str) -> str | None:
    if not path.startswith("/api/approvals/"):
        return None
    rest = path[len("/api/approvals/"):]
    return rest if rest and "/" not in rest else None


def asset(name: str) -> bytes:
    return resources.files("nami_yaml.serve").joinpath("page", name).read_bytes()


def serve_page(folder: QueueFolder, host: str, port: int, *, approvers: Mapping[str, str], remote: bool,
               allowed_hosts: Sequence[str] = (), on_ready: Callable[[str], None]) -> None:
    """Serve the page at ``http://host:port/`` until interrupted; ``on_ready`` gets the URL with the page
    token once the socket listens (the port chosen, when 0 was asked for)."""
    bare = host.strip("[]")
    family = socket.AF_INET6 if ":" in bare else socket.AF_INET

    class Server(http.server.ThreadingHTTPServer):
        address_family = family
        daemon_threads = True

    httpd = Server((bare, port), Handler)
    bound = httpd.server_address[1]
    hosts, origins = allowed_names(bare, bound, allowed_hosts)
    page = PageServer(folder, approvers, remote, hosts, origins)
    httpd.RequestHandlerClass = type("PageHandler", (Handler,), {"page": page})
    shown_host = f"[{bare}]" if family == socket.AF_INET6 else bare
    try:
        on_ready(f"http://{shown_host}:{bound}/?token={page.page_token}")
        httpd.serve_forever(poll_interval=0.2)
    finally:
        with contextlib.suppress(OSError):
            httpd.server_close()
