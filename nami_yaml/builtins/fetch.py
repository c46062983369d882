"""The fetch_url built-in: GET an http(s) URL as readable text, refusing internal addresses.

Every hop (the first URL and each redirect) goes through netguard.check_url, and the connection
dials the exact address that was checked while Host header and TLS SNI/certificate checks use the
host name. One deadline covers DNS, connect, TLS, headers and body: a watchdog thread shuts the
socket down when it passes, so a server that drips one byte at a time cannot hold the agent.
"""

from __future__ import annotations

import codecs
import contextlib
import http.client
import re
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, urljoin

from nami_yaml.builtins.html_text import html_to_text_bounded
from nami_yaml.builtins.netguard import BlockedURL, Target, check_url, parse_allow_entry
from nami_yaml.env_secrets import child_environment
from nami_yaml.errors import ToolError
from nami_yaml.result import ToolResult
from nami_yaml.runners.output import truncate_text
from nami_yaml.runners.sandbox.plan import KIND_NAMI, SandboxPlan, plan_for
from nami_yaml.runtime import RuntimeContext, ToolSettings

MAX_REDIRECTS = 5
USER_AGENT = "nami-fetch_url/0.1"
ACCEPT = "text/html, text/*;q=0.9, application/json;q=0.9, application/xml;q=0.8, */*;q=0.1"
_REDIRECT_CODES = {301, 302, 303, 307, 308}
_TEXT_HINTS = ("json", "xml", "yaml", "javascript", "ecmascript", "csv", "markdown", "toml", "sql")
_URL_SAFE = "!#$%&'()*+,/:;=?@[]~"
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)


class PinnedHTTPConnection(http.client.HTTPConnection):
    """Speaks HTTP to ``host`` (Host header) but dials ``address``, the IP netguard checked."""

    def __init__(self, host: str, port: int, *, address: str, timeout: float):
        super().__init__(host, port, timeout=timeout)
        self.address = address
        # http.client drops self.sock once a response owns the socket; the watchdog needs it still.
        self.dialed: socket.socket | None = None

    def _dial(self) -> socket.socket:
        sock = socket.create_connection((self.address, self.port), self.timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def connect(self) -> None:
        self.sock = self.dialed = self._dial()


class PinnedHTTPSConnection(PinnedHTTPConnection):
    """HTTPS to ``host`` (SNI and certificate name) over a TCP connection to ``address``."""

    default_port = http.client.HTTPS_PORT

    def __init__(self, host: str, port: int, *, address: str, timeout: float,
                 context: ssl.SSLContext | None = None):
        super().__init__(host, port, address=address, timeout=timeout)
        self.context = context or ssl.create_default_context()

    def connect(self) -> None:
        # Handshake after self.dialed is set, so the watchdog can interrupt a stalled handshake too.
        tls = self.context.wrap_socket(self._dial(), server_hostname=self.host, do_handshake_on_connect=False)
        self.sock = self.dialed = tls
        tls.do_handshake()


class _Watchdog:
    """Shuts the connection's socket down at the deadline or on cancel, unblocking any read."""

    def __init__(self, deadline: float, cancel: threading.Event):
        self.deadline = deadline
        self.cancel = cancel
        self.fired: str | None = None
        self.conn: PinnedHTTPConnection | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nami-fetch-watchdog", daemon=True)

    def __enter__(self) -> _Watchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        if self.conn is not None:
            self.conn.close()

    def _run(self) -> None:
        while not self._done.wait(min(0.05, max(self.deadline - time.monotonic(), 0))):
            if self.cancel.is_set():
                self.fired = "cancelled"
            elif time.monotonic() >= self.deadline:
                self.fired = "timeout"
            else:
                continue
            sock = self.conn.dialed if self.conn is not None else None
            if sock is not None:
                with contextlib.suppress(OSError):  # already closed: nothing left to unblock
                    sock.shutdown(socket.SHUT_RDWR)
            return


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


def _connect(target: Target, deadline: float, dog: _Watchdog) -> PinnedHTTPConnection:
    cls: type[PinnedHTTPConnection] = PinnedHTTPSConnection if target.scheme == "https" else PinnedHTTPConnection
    error: OSError | None = None
    for address in target.addresses:  # each one passed the policy; try them like a browser would
        dog.conn = cls(target.host, target.port, address=address, timeout=_remaining(deadline))
        try:
            dog.conn.connect()
            return dog.conn
        except ssl.SSLError:
            raise
        except OSError as exc:
            dog.conn.close()
            error = exc
    assert error is not None
    raise error


def _decoder(encoding: str) -> Callable[[bytes, int], bytes]:
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return lambda chunk, _limit: chunk
    if encoding in ("gzip", "x-gzip", "deflate"):
        # max_length caps the output of each step, so a compression bomb stops at the byte cap.
        inflater = zlib.decompressobj(47 if encoding != "deflate" else 15)
        return lambda chunk, limit: inflater.decompress(chunk, max(limit, 1))
    raise ToolError(f"the server sent Content-Encoding {encoding!r}, which fetch_url cannot decode")


def _read_body(resp: http.client.HTTPResponse, limit: int, cancel: threading.Event) -> tuple[bytes, bool]:
    decode = _decoder(resp.headers.get("Content-Encoding", ""))
    body = bytearray()
    raw = 0
    while not cancel.is_set():
        chunk = resp.read1(65536)
        if not chunk:
            return bytes(body), False
        raw += len(chunk)
        body += decode(chunk, limit + 1 - len(body))
        if len(body) > limit or raw > limit:
            return bytes(body[:limit]), True
    raise InterruptedError


def _is_text(content_type: str) -> bool:
    main, _, sub = content_type.partition("/")
    return main == "text" or any(hint in sub for hint in _TEXT_HINTS)


def _charset(resp: http.client.HTTPResponse, body: bytes, html: bool) -> str:
    for bom, name in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
                      (codecs.BOM_UTF16_BE, "utf-16")):
        if body.startswith(bom):
            return name
    found = resp.headers.get_content_charset()
    if not found and html:
        match = _META_CHARSET.search(body[:4096])
        found = match.group(1).decode("ascii") if match else None
    try:
        return codecs.lookup(found).name if found else "utf-8"
    except LookupError:
        return "utf-8"


def _size_text(resp: http.client.HTTPResponse) -> str:
    length = resp.headers.get("Content-Length", "")
    return f"{int(length):,} bytes" if length.isdigit() else "size unknown"


def _render(resp: http.client.HTTPResponse, url: str, settings: ToolSettings, cancel: threading.Event,
            deadline: float, child: tuple[dict[str, str], SandboxPlan] | None) -> tuple[str, dict[str, Any]]:
    declared = resp.headers.get("Content-Type")
    content_type = resp.headers.get_content_type() if declared else ""
    if content_type and not _is_text(content_type):
        raise ToolError(f"{url} returned binary content ({content_type}, {_size_text(resp)}); "
                        "fetch_url only returns text such as HTML, plain text, JSON or XML")
    body, truncated = _read_body(resp, settings.fetch_max_bytes, cancel)
    if not content_type and b"\x00" in body[:1024]:
        raise ToolError(f"{url} returned binary content (no Content-Type, {_size_text(resp)}); "
                        "fetch_url only returns text")
    sniffed_html = not content_type and body[:512].lstrip()[:14].lower() in (b"<!doctype html", b"<html")
    html = content_type in ("text/html", "application/xhtml+xml") or sniffed_html
    text = body.decode(_charset(resp, body, html), errors="replace")
    if html:
        try:
            # In a child process within what is left of the time budget: parsing can be quadratic.
            text = html_to_text_bounded(text, url, timeout=_remaining(deadline), cancel=cancel,
                                        env=child[0] if child else None, sandbox=child[1] if child else None)
        except ValueError as exc:
            raise ToolError(f"{url} returned HTML that could not be turned into text: {exc}") from None
    info = {"content_type": declared or "", "bytes": len(body), "cut_at_max_bytes": truncated,
            "chars": len(text)}
    return text, info


def _result(url: str, final: str, resp: http.client.HTTPResponse, text: str, info: dict[str, Any],
            chain: list[str], settings: ToolSettings, spill_dir: Path | None) -> ToolResult:
    lines = [f"URL: {final}", f"Status: {resp.status} {resp.reason}".rstrip(),
             f"Content-Type: {info['content_type'] or '(none)'}"]
    if chain:
        lines.append("Redirected: " + " -> ".join([*chain, final]))
    if info["cut_at_max_bytes"]:
        lines.append(f"Note: stopped reading at {settings.fetch_max_bytes:,} bytes (tools.fetch_url.max_bytes); "
                     "the document is cut off")
    spill = None
    if len(text) > settings.max_output:
        text, spill = truncate_text(text, settings.max_output, spill_dir, settings.max_saved_output)
    ok = 200 <= resp.status < 300
    # "truncated" tells the entry-point runner the text is already capped (and saved whole in spill_path).
    details = {"url": url, "final_url": final, "status": resp.status, "redirects": chain, **info,
               "truncated": spill is not None or len(text) < info["chars"],
               "spill_path": str(spill) if spill else None}
    return ToolResult("\n".join(lines) + "\n\n" + (text.strip() or "(empty body)"), ok=ok, details=details)


def _check(url: str, previous: Target | None, source: str | None, settings: ToolSettings,
           deadline: float) -> Target:
    what = f"the redirect from {source} to {url}" if source else url
    try:
        target = check_url(url, settings.fetch_allow_hosts, timeout=_remaining(deadline))
    except BlockedURL as exc:
        raise ToolError(f"fetch_url refused {what}: {exc}") from None
    if previous is not None and target.internal and not previous.allowed:
        # Otherwise any public page could steer the agent into an allow-listed internal host.
        raise ToolError(f"fetch_url refused {what}: {target.host} is an allow-listed internal host, "
                        "and only an allow-listed page may redirect to it")
    return target


def _one_hop(target: Target, settings: ToolSettings, cancel: threading.Event, deadline: float,
             child: tuple[dict[str, str], SandboxPlan] | None,
             ) -> str | tuple[http.client.HTTPResponse, str, dict[str, Any]]:
    """One GET: the absolute URL it redirects to, or the response with its rendered text."""
    with _Watchdog(deadline, cancel) as dog:
        try:
            conn = _connect(target, deadline, dog)
            conn.putrequest("GET", quote(target.request_target, safe=_URL_SAFE), skip_accept_encoding=True)
            for name, value in (("User-Agent", USER_AGENT), ("Accept", ACCEPT),
                                ("Accept-Encoding", "gzip"), ("Connection", "close")):
                conn.putheader(name, value)
            conn.endheaders()
            resp = conn.getresponse()
            location = resp.headers.get("Location")
            if resp.status in _REDIRECT_CODES and location:
                return urljoin(target.url, quote(location.strip(), safe=_URL_SAFE))
            text, info = _render(resp, target.url, settings, cancel, deadline, child)
            if dog.fired:  # a shut-down socket reads as a normal end of the body
                raise InterruptedError if dog.fired == "cancelled" else TimeoutError
            return resp, text, info
        except (OSError, http.client.HTTPException) as exc:
            if dog.fired == "cancelled" or isinstance(exc, InterruptedError):
                raise ToolError(f"fetching {target.url} was cancelled") from None
            if dog.fired or isinstance(exc, TimeoutError):
                raise TimeoutError from None
            raise ToolError(f"fetching {target.url} failed: {_describe(exc)}") from None


def fetch_url(url: str, *, ctx: RuntimeContext | None = None) -> ToolResult:
    """Fetch ``url`` (http/https) and return its text; see fetch_url.yaml for the model's view."""
    settings = ctx.settings if ctx is not None else ToolSettings()
    cancel = ctx.cancel if ctx is not None else threading.Event()
    for entry in settings.fetch_allow_hosts:
        try:
            parse_allow_entry(entry)
        except ValueError as exc:
            raise ToolError(f"tools.fetch_url.allow_hosts in agent.yaml is invalid: {exc}") from None
    deadline = time.monotonic() + settings.fetch_timeout
    # The HTML parser's child (environment, sandbox: no network, nothing written).
    child = None if ctx is None else (
        child_environment(ctx.host_env, protected=ctx.protected_env, scrub=ctx.env_scrub),
        plan_for(ctx, kind=KIND_NAMI, read_only=True))
    current, chain, previous = url.strip(), [], None
    for _ in range(MAX_REDIRECTS + 1):
        if cancel.is_set():
            raise ToolError(f"fetching {current} was cancelled")
        try:
            target = _check(current, previous, chain[-1] if chain else None, settings, deadline)
            outcome = _one_hop(target, settings, cancel, deadline, child)
        except TimeoutError:
            raise ToolError(f"fetching {current} timed out after {settings.fetch_timeout:g}s "
                            "(tools.fetch_url.timeout)") from None
        if isinstance(outcome, str):
            chain.append(current)
            current, previous = outcome, target
            continue
        resp, text, info = outcome
        return _result(url, current, resp, text, info, chain, settings, ctx.spill_dir if ctx else None)
    raise ToolError(f"fetch_url stopped after {MAX_REDIRECTS} redirects: " + " -> ".join([*chain, current]))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS certificate check failed ({exc.verify_message})"
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, OSError) else f"{type(exc).__name__}: {text}"
