"""fetch_url against real HTTP servers on the loopback interface."""

from __future__ import annotations

import dataclasses
import gzip
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from nami_yaml.builtins.fetch import PinnedHTTPConnection, PinnedHTTPSConnection, _check, fetch_url
from nami_yaml.builtins.html_text import html_to_text
from nami_yaml.builtins.netguard import ALLOW_HINT, Target, check_url
from nami_yaml.errors import ToolError
from nami_yaml.registry.loader import load_tool_file
from nami_yaml.runtime import RuntimeContext

PAGE = """<!doctype html><html><head><title>Ops  Guide</title>
<style>body { color: red }</style><script>var secret = "do-not-show";</script></head>
<body><h1>Deploying</h1><p>Run the <b>pipeline</b> and read the <a href="/docs/runbook">runbook</a>.</p>
<ul><li>check dashboards</li><li>page on-call</li></ul><noscript>enable javascript</noscript></body></html>"""

# Test-only self-signed certificate and key for DNS:localhost, valid 2000-2100; trusts nothing else.
TEST_CERT_AND_KEY = """\
-----BEGIN CERTIFICATE-----
MIIBcTCCARegAwIBAgIBATAKBggqhkjOPQQDAjAUMRIwEAYDVQQDDAlsb2NhbGhv
c3QwIBcNMDAwMTAxMDAwMDAwWhgPMjEwMDAxMDEwMDAwMDBaMBQxEjAQBgNVBAMM
CWxvY2FsaG9zdDBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABKwXMd3YXm3JZDeT
i/xNrHZVXWuQOkCowBQRY89/9wHpnKOc7y3qwPtT5X2KmJTjZNYxoq1tofLnI2IJ
njbTTPmjWDBWMA8GA1UdEwEB/wQFMAMBAf8wFAYDVR0RBA0wC4IJbG9jYWxob3N0
MA4GA1UdDwEB/wQEAwIChDAdBgNVHQ4EFgQUcb2RDpi5x3dOm+YPVoGot5WOnhAw
CgYIKoZIzj0EAwIDSAAwRQIhANRqIvFZ85ZIwgN1EDY02EydDbKC3ExCDR1rEOzL
S44hAiBGnoQfWq6zZ2XSgnrAeB6bLObQmC+hz7l3pnCQZZntPQ==
-----END CERTIFICATE-----
-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgHNVVKwwfDh+x9TzX
bxoOI0UYMgkA3gHM//3I5oDmfaWhRANCAASsFzHd2F5tyWQ3k4v8Tax2VV1rkDpA
qMAUEWPPf/cB6ZyjnO8t6sD7U+V9ipiU42TWMaKtbaHy5yNiCZ4200z5
-----END PRIVATE KEY-----
"""

Handler = Callable[[BaseHTTPRequestHandler, "Server"], None]


class Server:
    """A threaded HTTP server that records every connection and request it receives."""

    def __init__(self, host: str = "127.0.0.1", family: socket.AddressFamily = socket.AF_INET,
                 tls: ssl.SSLContext | None = None):
        self.connections = 0
        self.requests: list[tuple[str, str]] = []  # (path, Host header)
        self.stop = threading.Event()
        self.routes: dict[str, Handler] = {}
        server = self

        class RequestHandler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests.append((self.path, self.headers.get("Host", "")))
                route = server.routes.get(self.path.split("?")[0])
                if route is None:
                    send(self, 404, "text/html", b"<h1>Not here</h1><p>no such page</p>")
                else:
                    route(self, server)

            def log_message(self, *args: Any) -> None:
                pass

        class HTTPServer(ThreadingHTTPServer):
            address_family = family

            def process_request(self, request: Any, client_address: Any) -> None:
                server.connections += 1
                super().process_request(request, client_address)

        self.httpd = HTTPServer((host, 0), RequestHandler)
        self.port = self.httpd.server_address[1]
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]


def send(handler: BaseHTTPRequestHandler, status: int, content_type: str | None, body: bytes,
         headers: dict[str, str] | None = None) -> None:
    handler.send_response(status)
    if content_type:
        handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)


def static(status: int, content_type: str | None, body: bytes, **headers: str) -> Handler:
    return lambda handler, _server: send(handler, status, content_type, body, headers)


def redirect(location: Callable[[Server], str]) -> Handler:
    return lambda handler, server: send(handler, 302, "text/plain", b"moved", {"Location": location(server)})


def stall(handler: BaseHTTPRequestHandler, server: Server) -> None:
    server.stop.wait(30)


def drip(handler: BaseHTTPRequestHandler, server: Server) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/plain")
    handler.end_headers()
    # One byte every 0.2 s: each read is quick, only the whole-request budget can stop it.
    while not server.stop.wait(0.2):
        try:
            handler.wfile.write(b"x")
            handler.wfile.flush()
        except OSError:
            return


def install_routes(server: Server) -> None:
    big = b"".join(b"line %05d of a long plain text file\n" % i for i in range(3000))
    server.routes.update({
        "/page.html": static(200, "text/html; charset=utf-8", PAGE.encode()),
        "/plain": static(200, "text/plain", b"just text\n"),
        "/data.json": static(200, "application/json", b'{"status": "green", "nodes": 3}'),
        "/big": static(200, "text/plain", big),
        "/logo.png": static(200, "image/png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 1226),
        "/mystery": static(200, None, b"\x00\x01\x02binary"),
        "/latin1": static(200, "text/plain; charset=iso-8859-1", "café crème".encode("latin-1")),
        "/meta-charset": static(200, "text/html", '<meta charset="iso-8859-1"><p>naïve</p>'.encode("latin-1")),
        "/gzip": static(200, "text/plain", gzip.compress(b"compressed hello " * 100), **{"Content-Encoding": "gzip"}),
        "/bomb": static(200, "text/plain", gzip.compress(b"a" * 5_000_000), **{"Content-Encoding": "gzip"}),
        "/brotli": static(200, "text/plain", b"??", **{"Content-Encoding": "br"}),
        "/missing": static(404, "text/html", b"<h1>Gone</h1><p>this page was removed</p>"),
        "/to-page": redirect(lambda s: "/page.html"),
        "/to-internal": redirect(lambda s: f"http://127.0.0.1:{s.port}/secret"),
        "/to-ipv6-mapped": redirect(lambda s: f"http://[::ffff:7f00:1]:{s.port}/secret"),
        "/to-file": redirect(lambda s: "file:///etc/passwd"),
        "/loop": redirect(lambda s: "/loop"),
        "/secret": static(200, "text/plain", b"internal secret"),
        "/stall": stall,
        "/drip": drip,
    })


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server()
    install_routes(srv)
    yield srv
    srv.close()


def ipv6_loopback_available() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as sock:
            sock.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.fixture
def server6() -> Iterator[Server | None]:
    if not ipv6_loopback_available():
        yield None
        return
    srv = Server("::1", socket.AF_INET6)
    install_routes(srv)
    yield srv
    srv.close()


def with_settings(ctx: RuntimeContext, **changes: Any) -> RuntimeContext:
    return dataclasses.replace(ctx, settings=dataclasses.replace(ctx.settings, **changes))


# --- SSRF refusals -------------------------------------------------------------------------------

REFUSED = [
    ("http://localhost:{port}/secret", "loopback"),
    ("http://LOCALHOST.:{port}/secret", "loopback"),
    ("http://api.localhost:{port}/secret", "loopback"),
    ("http://127.0.0.1:{port}/secret", "loopback"),
    ("http://[::ffff:127.0.0.1]:{port}/secret", "loopback"),
    ("http://[::ffff:7f00:1]:{port}/secret", "loopback"),
    ("http://[::127.0.0.1]:{port}/secret", "loopback"),
    ("http://0x7f000001:{port}/secret", "loopback"),
    ("http://127.1:{port}/secret", "loopback"),
    ("http://2130706433:{port}/secret", "loopback"),
    ("http://0177.0.0.1:{port}/secret", "loopback"),
    ("http://%31%32%37.0.0.1:{port}/secret", "loopback"),
    ("http://evil.example@127.0.0.1:{port}/secret", "loopback"),
    ("http://169.254.169.254:{port}/latest/meta-data/", "link-local"),
    ("http://10.0.0.1:{port}/", "private"),
    ("http://192.168.1.1:{port}/", "private"),
    ("http://[fe80::1]:{port}/", "link-local"),
    ("http://224.0.0.1:{port}/", "multicast"),
    ("http://0.0.0.0:{port}/secret", "unspecified"),
    ("http://0:{port}/secret", "unspecified"),
    ("ftp://127.0.0.1:{port}/secret", "only http and https"),
    ("file:///etc/passwd", "only http and https"),
]


@pytest.mark.parametrize(("template", "reason"), REFUSED)
def test_internal_addresses_are_refused_before_connecting(
        server: Server, ctx: RuntimeContext, template: str, reason: str) -> None:
    url = template.format(port=server.port)
    with pytest.raises(ToolError) as info:
        fetch_url(url, ctx=ctx)
    message = str(info.value)
    assert message.startswith(f"fetch_url refused {url}: ")
    assert reason in message
    assert server.connections == 0


def test_ipv6_loopback_is_refused(server: Server, server6: Server | None, ctx: RuntimeContext) -> None:
    port = server6.port if server6 is not None else server.port
    with pytest.raises(ToolError, match="::1 is a loopback address"):
        fetch_url(f"http://[::1]:{port}/secret", ctx=ctx)
    assert server.connections == 0
    assert server6 is None or server6.connections == 0
    if server6 is not None:  # and once allow-listed, the bracketed literal works end to end
        result = fetch_url(f"http://[::1]:{server6.port}/plain", ctx=with_settings(ctx, fetch_allow_hosts=("[::1]",)))
        assert result.ok and server6.requests == [("/plain", f"[::1]:{server6.port}")]


def test_refusal_explains_how_to_allow(server: Server, ctx: RuntimeContext) -> None:
    with pytest.raises(ToolError) as info:
        fetch_url(f"http://127.0.0.1:{server.port}/secret", ctx=ctx)
    assert "127.0.0.1 is a loopback address" in str(info.value)
    assert ALLOW_HINT in str(info.value)


# --- allowed fetches -----------------------------------------------------------------------------

@pytest.fixture
def allowed(ctx: RuntimeContext) -> RuntimeContext:
    return with_settings(ctx, fetch_allow_hosts=("localhost",))


def test_allowed_host_html_becomes_readable_text(server: Server, allowed: RuntimeContext) -> None:
    url = f"http://localhost:{server.port}/page.html"
    result = fetch_url(url, ctx=allowed)
    assert result.ok
    head, _, body = result.content.partition("\n\n")
    assert head.splitlines() == [f"URL: {url}", "Status: 200 OK", "Content-Type: text/html; charset=utf-8"]
    assert "Title: Ops Guide" in body
    assert "# Deploying" in body
    assert f"Run the pipeline and read the runbook (http://localhost:{server.port}/docs/runbook)." in body
    assert "- check dashboards\n- page on-call" in body
    assert "do-not-show" not in body and "color: red" not in body and "enable javascript" not in body
    assert server.requests == [("/page.html", f"localhost:{server.port}")]
    assert result.details["status"] == 200 and result.details["final_url"] == url


def test_allow_list_port_is_respected(server: Server, ctx: RuntimeContext) -> None:
    good = with_settings(ctx, fetch_allow_hosts=(f"localhost:{server.port}",))
    assert fetch_url(f"http://localhost:{server.port}/plain", ctx=good).content.endswith("just text")
    other_port = with_settings(ctx, fetch_allow_hosts=("localhost:1",))
    with pytest.raises(ToolError, match="loopback"):
        fetch_url(f"http://localhost:{server.port}/plain", ctx=other_port)
    assert server.paths() == ["/plain"]


def test_allowed_ip_matches_every_spelling_of_it(server: Server, ctx: RuntimeContext) -> None:
    allow_ip = with_settings(ctx, fetch_allow_hosts=("127.0.0.1",))
    result = fetch_url(f"http://127.1:{server.port}/plain", ctx=allow_ip)
    assert result.ok and "just text" in result.content


def test_invalid_allow_entry_is_reported(server: Server, ctx: RuntimeContext) -> None:
    with pytest.raises(ToolError, match="allow_hosts"):
        fetch_url(f"http://localhost:{server.port}/plain", ctx=with_settings(ctx, fetch_allow_hosts=("host:0",)))
    assert server.connections == 0


def test_json_is_returned_as_is(server: Server, allowed: RuntimeContext) -> None:
    result = fetch_url(f"http://localhost:{server.port}/data.json", ctx=allowed)
    assert result.ok and result.content.endswith('{"status": "green", "nodes": 3}')
    assert "Content-Type: application/json" in result.content


def test_charsets_from_header_and_meta(server: Server, allowed: RuntimeContext) -> None:
    assert "café crème" in fetch_url(f"http://localhost:{server.port}/latin1", ctx=allowed).content
    assert "naïve" in fetch_url(f"http://localhost:{server.port}/meta-charset", ctx=allowed).content


def test_non_2xx_is_an_error_result_with_status_and_text(server: Server, allowed: RuntimeContext) -> None:
    result = fetch_url(f"http://localhost:{server.port}/missing", ctx=allowed)
    assert not result.ok
    assert "Status: 404 Not Found" in result.content
    assert "# Gone" in result.content and "this page was removed" in result.content
    assert result.details["status"] == 404


# --- redirects -----------------------------------------------------------------------------------

def test_redirect_within_allowed_host_is_followed_and_reported(server: Server, allowed: RuntimeContext) -> None:
    start = f"http://localhost:{server.port}/to-page"
    final = f"http://localhost:{server.port}/page.html"
    result = fetch_url(start, ctx=allowed)
    assert result.ok
    assert f"URL: {final}" in result.content
    assert f"Redirected: {start} -> {final}" in result.content
    assert "# Deploying" in result.content
    assert server.paths() == ["/to-page", "/page.html"]
    assert result.details["redirects"] == [start]


@pytest.mark.parametrize("route", ["/to-internal", "/to-ipv6-mapped"])
def test_redirect_to_a_refused_address_is_refused(server: Server, allowed: RuntimeContext, route: str) -> None:
    with pytest.raises(ToolError) as info:
        fetch_url(f"http://localhost:{server.port}{route}", ctx=allowed)
    message = str(info.value)
    assert message.startswith(f"fetch_url refused the redirect from http://localhost:{server.port}{route} to ")
    assert "loopback" in message
    assert server.paths() == [route]  # /secret was never requested


def test_redirect_to_another_scheme_is_refused(server: Server, allowed: RuntimeContext) -> None:
    with pytest.raises(ToolError, match="only http and https"):
        fetch_url(f"http://localhost:{server.port}/to-file", ctx=allowed)


def test_redirect_loops_stop(server: Server, allowed: RuntimeContext) -> None:
    with pytest.raises(ToolError, match="stopped after 5 redirects"):
        fetch_url(f"http://localhost:{server.port}/loop", ctx=allowed)
    assert server.paths() == ["/loop"] * 6


# --- caps, content types, time budget ------------------------------------------------------------

def test_body_is_cut_at_max_bytes_with_a_note(server: Server, allowed: RuntimeContext) -> None:
    capped = with_settings(allowed, fetch_max_bytes=1000)
    result = fetch_url(f"http://localhost:{server.port}/big", ctx=capped)
    assert result.ok
    assert "stopped reading at 1,000 bytes" in result.content
    body = result.content.partition("\n\n")[2]
    assert body.startswith("line 00000") and len(body) <= 1000
    assert result.details["bytes"] == 1000 and result.details["cut_at_max_bytes"] is True


def test_text_is_capped_at_max_output_with_a_note(server: Server, allowed: RuntimeContext) -> None:
    result = fetch_url(f"http://localhost:{server.port}/big", ctx=with_settings(allowed, max_output=500))
    assert "characters omitted; full output: " in result.content
    assert len(result.content) < 1200
    assert "stopped reading" not in result.content
    assert result.details["truncated"] is True
    saved = Path(result.details["spill_path"]).read_text()
    assert len(saved) == result.details["chars"]


def test_gzip_is_decoded_and_bombs_stop_at_the_cap(server: Server, allowed: RuntimeContext) -> None:
    result = fetch_url(f"http://localhost:{server.port}/gzip", ctx=allowed)
    assert result.content.endswith(("compressed hello " * 100).strip())
    bomb = fetch_url(f"http://localhost:{server.port}/bomb", ctx=with_settings(allowed, fetch_max_bytes=4096))
    assert bomb.details["bytes"] == 4096 and bomb.details["cut_at_max_bytes"] is True


def test_unknown_content_encoding_is_an_error(server: Server, allowed: RuntimeContext) -> None:
    with pytest.raises(ToolError, match="Content-Encoding 'br'"):
        fetch_url(f"http://localhost:{server.port}/brotli", ctx=allowed)


def test_binary_content_is_refused_with_type_and_size(server: Server, allowed: RuntimeContext) -> None:
    with pytest.raises(ToolError) as info:
        fetch_url(f"http://localhost:{server.port}/logo.png", ctx=allowed)
    assert "binary content (image/png, 1,234 bytes)" in str(info.value)
    with pytest.raises(ToolError, match="binary content"):
        fetch_url(f"http://localhost:{server.port}/mystery", ctx=allowed)


@pytest.mark.parametrize("route", ["/stall", "/drip"])
def test_whole_fetch_fits_the_time_budget(server: Server, allowed: RuntimeContext, route: str) -> None:
    with pytest.raises(ToolError) as info:
        fetch_url(f"http://localhost:{server.port}{route}", ctx=with_settings(allowed, fetch_timeout=1.0))
    assert "timed out after 1s" in str(info.value)


def test_cancel_interrupts_a_slow_fetch(server: Server, allowed: RuntimeContext) -> None:
    slow = with_settings(allowed, fetch_timeout=60.0)
    timer = threading.Timer(0.5, slow.cancel.set)
    timer.start()
    try:
        with pytest.raises(ToolError, match="cancelled"):
            fetch_url(f"http://localhost:{server.port}/drip", ctx=slow)
    finally:
        timer.cancel()


def test_connection_refused_is_a_clean_error(allowed: RuntimeContext) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        free_port = sock.getsockname()[1]
    with pytest.raises(ToolError, match=f"fetching http://localhost:{free_port}/ failed"):
        fetch_url(f"http://localhost:{free_port}/", ctx=allowed)


# --- the connection goes to the checked address --------------------------------------------------

def test_connection_dials_the_checked_address_not_the_name(server: Server) -> None:
    target = check_url(f"http://localhost:{server.port}/plain", ["localhost"])
    assert "127.0.0.1" in target.addresses
    # A name nothing can resolve: the request can only succeed by dialling the pinned address.
    conn = PinnedHTTPConnection("pinned.invalid", server.port, address="127.0.0.1", timeout=10)
    try:
        conn.request("GET", "/plain")
        assert conn.dialed is not None and conn.dialed.getpeername()[0] == "127.0.0.1"
        assert conn.getresponse().read() == b"just text\n"
    finally:
        conn.close()
    assert server.requests == [("/plain", f"pinned.invalid:{server.port}")]


def test_tls_sends_the_host_name_as_sni_to_the_pinned_address() -> None:
    received: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def accept_once() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(10)
            received.append(conn.recv(4096))  # the ClientHello carries SNI in clear text

    thread = threading.Thread(target=accept_once, daemon=True)
    thread.start()
    tls = PinnedHTTPSConnection("sni-check.invalid", port, address="127.0.0.1", timeout=10)
    with pytest.raises(OSError):
        tls.connect()  # the listener is no TLS server; only the hello matters here
    tls.close()
    thread.join(10)
    listener.close()
    assert received and b"sni-check.invalid" in received[0]


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    pem = tmp_path / "localhost.pem"
    pem.write_text(TEST_CERT_AND_KEY)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pem)
    srv = Server(tls=context)
    install_routes(srv)
    yield srv, pem
    srv.close()


def test_https_certificates_are_verified(tls_server: tuple[Server, Path], allowed: RuntimeContext) -> None:
    server, _ = tls_server
    with pytest.raises(ToolError, match="TLS certificate check failed"):
        fetch_url(f"https://localhost:{server.port}/plain", ctx=allowed)
    assert server.requests == []


def test_https_with_a_trusted_ca_from_ssl_cert_file(
        tls_server: tuple[Server, Path], allowed: RuntimeContext, monkeypatch: pytest.MonkeyPatch) -> None:
    server, pem = tls_server
    monkeypatch.setenv("SSL_CERT_FILE", str(pem))  # how an ops team adds its internal CA
    result = fetch_url(f"https://localhost:{server.port}/page.html", ctx=allowed)
    assert result.ok and "# Deploying" in result.content
    assert server.requests == [("/page.html", f"localhost:{server.port}")]


def test_tls_checks_the_certificate_against_the_name_not_the_dialled_ip(tls_server: tuple[Server, Path]) -> None:
    server, pem = tls_server
    trusting = ssl.create_default_context(cafile=str(pem))
    good = PinnedHTTPSConnection("localhost", server.port, address="127.0.0.1", timeout=10, context=trusting)
    try:
        good.request("GET", "/plain")
        assert good.getresponse().read() == b"just text\n"
    finally:
        good.close()
    wrong = PinnedHTTPSConnection("other.invalid", server.port, address="127.0.0.1", timeout=10, context=trusting)
    with pytest.raises(ssl.SSLCertVerificationError, match="other.invalid"):
        wrong.connect()
    wrong.close()


def test_redirect_from_a_public_page_into_an_allow_listed_internal_host_is_refused(ctx: RuntimeContext) -> None:
    public = Target(url="https://public.example/", scheme="https", host="public.example", port=443,
                    addresses=("93.184.216.34",))
    settings = dataclasses.replace(ctx.settings, fetch_allow_hosts=("127.0.0.1",))
    with pytest.raises(ToolError, match="only an allow-listed page may redirect to it"):
        _check("http://127.0.0.1:8080/admin", public, public.url, settings, time.monotonic() + 10)
    trusted = dataclasses.replace(public, allowed=True)
    assert _check("http://127.0.0.1:8080/admin", trusted, public.url, settings, time.monotonic() + 10).internal


# --- declaration and helpers ---------------------------------------------------------------------

def test_declaration_loads_and_points_at_this_function() -> None:
    path = Path(__file__).parents[2] / "nami_yaml" / "builtins" / "fetch_url.yaml"
    tools, problems = load_tool_file(path, builtin=True)
    assert problems == []
    (tool,) = tools
    assert tool.name == "fetch_url" and tool.risk == "read"
    assert tool.parameters["required"] == ["url"]
    assert tool.runner.resolve() is fetch_url


def test_html_to_text_structure() -> None:
    html = """<html><head><title>T</title></head><body>
    <h2>Steps</h2><ol><li>build<ul><li>lint</li></ul></li><li>ship</li></ol>
    <pre>
  indented
    code</pre>
    <table><tr><th>name</th><th>state</th></tr><tr><td>web</td><td>up</td></tr></table>
    <svg><title>icon</title></svg><p>see <a href="https://x.example/a">docs</a> or <a href="#top">top</a></p>"""
    assert html_to_text(html) == (
        "Title: T\n\n## Steps\n\n1. build\n  - lint\n2. ship\n\n  indented\n    code\n\n"
        "name | state\nweb | up\n\nsee docs (https://x.example/a) or top"
    )
