"""``nami mcp login``: the interactive half of OAuth for HTTP MCP servers (the provider and the token
storage are in ``oauth.py``).

The SDK discovers the authorization server, registers nami as a client (or reuses the client registered
last time, while its redirect port is free again), and hands over the authorization URL; the person opens
it, and the redirect comes back to a small HTTP server on 127.0.0.1 or is pasted on stdin (a login over
SSH, whose browser runs elsewhere). The tokens are stored as soon as the SDK has them; then the server is
asked for its tools with them.

Anyone on the machine can reach that port, and any web page the person has open can make their browser
request it: a redirect counts only with the ``state`` of the authorization URL shown (anything else is
answered 404 and the login waits on), so a request made first can neither end the login nor choose what it
says; each request is served on a thread of its own with a deadline, so a connection left open holds
nothing up. What the authorization server says of a refusal is shown with its control characters escaped.

A login goes over https only (the MCP specification's rule for every authorization endpoint): the server's URL
and the authorization and token endpoints its metadata names, but for a server on this machine (loopback).
Over plain http the code, the tokens and every later request's bearer token would cross the network
readable, and a cloned agent.yaml chooses the URL.
"""

from __future__ import annotations

import http.server
import ipaddress
import queue
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO
from urllib.parse import parse_qs, urlsplit

import anyio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult

from nami_yaml.display import visible_line
from nami_yaml.mcp.client import CLIENT_INFO, _all_tools, _describe, _innermost
from nami_yaml.mcp.oauth import McpLoginError, NamiOAuth, StoredTokens
from nami_yaml.mcp.subscriptions import negotiate
from nami_yaml.mcp.token_store import AuthRecord, TokenStore

CALLBACK_PATH = "/callback"
LOGIN_TIMEOUT = 600.0  # seconds to wait for the person to approve in the browser
REQUEST_TIMEOUT = 10.0  # seconds a connection to the callback may take to send its request
_POLL = 0.1


@dataclass
class LoginResult:
    issuer: str
    tools: int  # how many tools the server listed once logged in
    path: str  # the token file


class _Redirects:
    """Where the authorization server's redirect arrives: the callback server's request or a pasted line."""

    def __init__(self) -> None:
        self.arrived: queue.Queue[str] = queue.Queue()
        self.state: str | None = None  # of the authorization URL shown; none shown yet: nothing is taken

    def expect(self, authorization_url: str) -> None:
        """The authorization URL shown to the person: its redirect is the one that carries its ``state`` (the
        last one: the SDK adds its parameters after any the authorization endpoint's address has)."""
        states = parse_qs(urlsplit(authorization_url).query).get("state")
        self.state = states[-1] if states else None

    def offer(self, url: str) -> bool:
        """Take a redirect URL (or its query) if it carries a code or an error, and this login's state."""
        query = _query(url)
        state, expected = query.get("state"), self.state
        if not ("code" in query or "error" in query) or state is None or expected is None:
            return False
        if not secrets.compare_digest(state.encode(), expected.encode()):
            return False
        self.arrived.put(url.strip())
        return True

    async def wait(self, timeout: float) -> AuthorizationCodeResult:
        deadline = time.monotonic() + timeout
        while True:
            try:
                url = self.arrived.get_nowait()
                break
            except queue.Empty:
                if time.monotonic() > deadline:
                    raise McpLoginError(f"no redirect came within {timeout:g} s; run `nami mcp login` again") \
                        from None
                await anyio.sleep(_POLL)
        query = _query(url)
        if "error" in query:
            why = query.get("error_description") or query["error"]
            raise McpLoginError(f"the authorization server refused: {visible_line(why)}")
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))


def _query(url: str) -> dict[str, str]:
    """The first value of each parameter of a URL's query (or of the query alone, with or without its ?)."""
    url = url.strip()
    return {key: values[0] for key, values in parse_qs(urlsplit(url).query or url.lstrip("?")).items()}


def _callback_server(sock: socket.socket, redirects: _Redirects) -> http.server.HTTPServer:
    class Handler(http.server.BaseHTTPRequestHandler):
        timeout = REQUEST_TIMEOUT  # a connection that sends nothing is closed, on its own thread meanwhile

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if urlsplit(self.path).path == CALLBACK_PATH and redirects.offer(self.path):
                body = b"nami: the login is done; you can close this tab.\n"
                self.send_response(200)
            else:
                body = b"nami: not a login redirect.\n"
                self.send_response(404)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # the query holds the code: never logged
            pass

    server = http.server.ThreadingHTTPServer(sock.getsockname(), Handler, bind_and_activate=False)
    server.daemon_threads = True
    server.socket.close()
    server.socket = sock
    return server


def _bind(port: int) -> socket.socket | None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(8)
    except OSError:
        sock.close()
        return None
    return sock


def _registered_port(record: AuthRecord | None) -> int | None:
    """The port of the loopback redirect the client registered last time was for: reused if free, so its
    registration still holds (an authorization server may insist on the exact redirect URI)."""
    for uri in (record.client_info or {}).get("redirect_uris") or () if record is not None else ():
        parts = urlsplit(str(uri))
        if parts.hostname == "127.0.0.1" and parts.port and parts.path == CALLBACK_PATH:
            return parts.port
    return None


def plain_http(url: str) -> bool:
    """Whether ``url`` is not https, and not to this machine either (http to a loopback address or localhost
    never leaves it)."""
    parts = urlsplit(url)
    if parts.scheme == "https":
        return False
    host = (parts.hostname or "").rstrip(".")
    if parts.scheme != "http" or not host:
        return True
    if host == "localhost" or host.endswith(".localhost"):
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:
        return True


def _refuse_plain_http(what: str, url: str) -> None:
    if plain_http(url):
        raise McpLoginError(f"{what} {visible_line(url)} is not https: the login's code and tokens would cross the "
                            "network readable, so nami logs in over https only (or to a server on this machine)")


def _read_pasted(stdin: TextIO, redirects: _Redirects) -> None:
    for line in stdin:
        if line.strip():
            redirects.offer(line)


def login(url: str, headers: dict[str, str], *, show_url: Callable[[str, str], None],
          stdin: TextIO | None = None, store: TokenStore | None = None,
          timeout: float = LOGIN_TIMEOUT) -> LoginResult:
    """Log in to the MCP server at ``url``: ``show_url(authorization_url, redirect_uri)`` tells the person what
    to open; the redirect comes to a callback server on 127.0.0.1 or as a line on ``stdin``. The tokens
    are stored when granted; then the server is asked for its tools with them. McpLoginError if it fails."""
    _refuse_plain_http("the MCP server's URL", url)
    store = store or TokenStore()
    previous = store.load(url)
    port = _registered_port(previous)
    sock = _bind(port) if port else None
    reuse = sock is not None
    if sock is None:
        sock = _bind(0)
    if sock is None:
        raise McpLoginError("no port on 127.0.0.1 could be opened for the login's redirect")
    redirect_uri = f"http://127.0.0.1:{sock.getsockname()[1]}{CALLBACK_PATH}"
    redirects = _Redirects()
    server = _callback_server(sock, redirects)
    threading.Thread(target=server.serve_forever, name="nami-login-callback", daemon=True).start()
    if stdin is not None:
        threading.Thread(target=_read_pasted, args=(stdin, redirects), name="nami-login-paste", daemon=True).start()
    storage = StoredTokens(store, url, fresh=True, reuse_client=reuse)

    async def redirect_handler(authorization_url: str) -> None:
        # Before the person is sent anywhere, and before a code exists to send to the token endpoint.
        metadata = provider.context.oauth_metadata
        _refuse_plain_http("the authorization URL", authorization_url)
        if metadata is not None:
            _refuse_plain_http("the token endpoint", str(metadata.token_endpoint))
        redirects.expect(authorization_url)
        show_url(authorization_url, redirect_uri)

    async def callback_handler() -> AuthorizationCodeResult:
        return await redirects.wait(timeout)

    provider = NamiOAuth(url, storage, redirect_uri=redirect_uri, interactive=True,
                         redirect_handler=redirect_handler, callback_handler=callback_handler)
    try:
        tools = anyio.run(_connect, url, headers, provider)
    except Exception as exc:
        inner = _innermost(exc)
        if isinstance(inner, McpLoginError):
            raise inner from None
        raise McpLoginError(f"the login to {url} failed: {_describe(inner)}") from None
    finally:
        server.shutdown()
        server.server_close()
    if not storage.saved:
        raise McpLoginError(f"{url} did not ask for a login (it answered without OAuth): nothing to store")
    return LoginResult(issuer=provider.issuer(), tools=tools, path=str(store.path(url, provider.issuer())))


async def _connect(url: str, headers: dict[str, str], provider: NamiOAuth) -> int:
    async with create_mcp_http_client(headers=headers, auth=provider) as client, \
            streamable_http_client(url, http_client=client) as (read, write), \
            ClientSession(read, write, client_info=CLIENT_INFO) as session:
        await negotiate(session)  # as a run does: a server of 2026-07-28 may take no initialize
        return len(await _all_tools(session))
