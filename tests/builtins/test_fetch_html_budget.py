"""fetch_url turns HTML into text within its time budget, and a page the parser chokes on is an error.

A review's 80 KB of `<a x` took 20.7 s in html.parser (which rescans to the end at every `<`) and only
then said "timed out after 3s"; 160 KB took 91 s.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from nami_yaml.builtins.fetch import fetch_url
from nami_yaml.builtins.html_text import html_to_text_bounded
from nami_yaml.errors import ToolError
from nami_yaml.runtime import RuntimeContext

PAGES = {
    "/quadratic": b"<html><body>" + b"<a x" * 40_000,
    "/malformed": "<html><body><![\u2039![ oops".encode(),
    "/fine": b"<html><head><title>T</title></head><body><h1>Hello</h1><p>world</p></body></html>",
}


@pytest.fixture
def base() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = PAGES[self.path]
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://localhost:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _ctx(ctx: RuntimeContext, timeout: float) -> RuntimeContext:
    return dataclasses.replace(ctx, settings=dataclasses.replace(ctx.settings, fetch_allow_hosts=("localhost",),
                                                                 fetch_timeout=timeout))


def test_a_quadratic_page_is_stopped_by_the_time_budget(ctx: RuntimeContext, base: str) -> None:
    with pytest.raises(ToolError, match=r"timed out after 2s"):
        fetch_url(f"{base}/quadratic", ctx=_ctx(ctx, 2.0))


def test_a_page_the_parser_cannot_read_is_an_error_result(ctx: RuntimeContext, base: str) -> None:
    with pytest.raises(ToolError, match=r"returned HTML that could not be turned into text: AssertionError"):
        fetch_url(f"{base}/malformed", ctx=_ctx(ctx, 20.0))


def test_ordinary_pages_still_read(ctx: RuntimeContext, base: str) -> None:
    result = fetch_url(f"{base}/fine", ctx=_ctx(ctx, 20.0))
    assert result.ok and result.content.endswith("Title: T\n\n# Hello\n\nworld")


def test_the_bounded_parser_can_be_cancelled() -> None:
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    with pytest.raises(InterruptedError):
        html_to_text_bounded("<a x" * 100_000, None, timeout=60, cancel=cancel)


def test_non_ascii_text_survives_the_child() -> None:
    text = html_to_text_bounded("<p>naïve café — 日本語 \U0001f600</p><a href='/ü'>link</a>", "http://h/x",
                                timeout=30, cancel=threading.Event())
    assert text == "naïve café — 日本語 \U0001f600\n\nlink (http://h/ü)"
