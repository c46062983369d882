"""A request too long for the server's context: how long it was, how much the server takes, and what to do.

Servers say it in their own words. llama.cpp's llama-server answers 400 with ``{"type":
"exceed_context_size_error", "n_prompt_tokens": N, "n_ctx": M}`` (older builds send the same object as an
``error:`` line of a stream they began with 200, see ``StreamErrors``); llama-cpp-python's server words
it as OpenAI does ("maximum context length is M tokens, however you requested N tokens", from its own
"Requested tokens (N) exceed context window of M"); vLLM says "(length N) is longer than the maximum
model length of M". Where the body gives no window, llama-server publishes it: ``GET /props`` ->
``default_generation_settings.n_ctx``.
"""

from __future__ import annotations

import ipaddress
import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

# The request's tokens and the window, each in every server's wording (llama-server, llama-cpp-python's own
# and its OpenAI-style wording, OpenAI and DeepSeek, vLLM).
_ASKED = (re.compile(r"request \((\d+) tokens\) exceeds", re.I), re.compile(r"requested tokens \((\d+)\)", re.I),
          re.compile(r"(?:you requested|resulted in) (\d+) tokens", re.I), re.compile(r"\(length (\d+)\) is longer"))
_WINDOW = (re.compile(r"available context size \((\d+) tokens\)", re.I), re.compile(r"context window of (\d+)", re.I),
           re.compile(r"maximum context length is (\d+) tokens", re.I), re.compile(r"maximum model length of (\d+)"))
# What only a llama.cpp server (either one) says: its context is the user's to raise, with -c / --n_ctx.
_LLAMA = re.compile(r"exceeds the available context size|exceed context window of|exceed_context_size_error", re.I)
CHARS_PER_TOKEN = 4  # as nami's estimates count (session/usage.py), for a request the server did not count
PROPS_TIMEOUT = 3.0  # seconds for GET /props: asked only once a request was refused as too long


@dataclass(frozen=True)
class Overflow:
    asked: int  # tokens of the request (the server's count, else an estimate)
    estimated: bool  # asked is nami's estimate from the request's size
    window: int | None  # the server's context in tokens, when it said so or publishes it
    local: bool  # a llama.cpp server, or one on this machine or network: its context is set where it starts

    def message(self, where: str, status: int | str) -> str:
        asked = f"~{self.asked:,}" if self.estimated else f"{self.asked:,}"
        if self.window is None:
            size = f"the request has {asked} tokens, more than the model at {where} takes ({status})"
        else:
            whose = "the server's" if self.local else "the model's"
            size = f"the request has {asked} tokens; {whose} context is {self.window:,} ({where}, {status})"
        raise_it = "raise it (llama-server -c N, python -m llama_cpp.server --n_ctx N) or " if self.local else ""
        return (f"{size}: {raise_it}send less: lower limits.max_output (tool output kept in the history), load "
                "fewer tools (`nami context` counts what every request starts with), and set model.context_window "
                "so the history is compacted before it fills")


def overflow(body: Any, detail: str, request_bytes: int, published: int | None = None, *,
             nearby: bool = False) -> Overflow:
    """What a refusal as too long says, with ``published`` (the server's /props) where the body has no window;
    ``nearby``: the server is on this machine or a private network (self-hosted, its context the user's)."""
    fields = body if isinstance(body, dict) else {}
    asked, window = _int(fields.get("n_prompt_tokens")), _int(fields.get("n_ctx"))
    texts = [detail, str(fields.get("message") or "")]
    asked = asked or _first_number(_ASKED, texts)
    window = window or _first_number(_WINDOW, texts)
    local = nearby or published is not None or "n_ctx" in fields or any(_LLAMA.search(t) for t in [*texts, str(fields.get("type"))])
    window = window or published
    if asked is None:
        return Overflow(max(1, request_bytes // CHARS_PER_TOKEN), True, window, local)
    return Overflow(asked, False, window, local)


def lacks_window(body: Any, detail: str) -> bool:
    """Whether a refusal as too long leaves the server's context size unsaid (worth asking /props)."""
    return overflow(body, detail, 0).window is None


def nearby(base_url: str) -> bool:
    """Whether ``base_url`` is on this machine or a private network: a server the user runs."""
    host = (urlsplit(base_url).hostname or "").lower()
    if host == "localhost" or host.endswith((".localhost", ".local", ".internal", ".lan")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_unspecified


def published_context(base_url: str, api_key: str | None, timeout: float = PROPS_TIMEOUT) -> int | None:
    """The context size llama-server publishes (``GET /props``, beside ``/v1``), or None where the server
    publishes none (another server: 404) or cannot say now."""
    parts = urlsplit(base_url)
    root = re.sub(r"/v1/?$", "", parts.path.rstrip("/"))
    request = urllib.request.Request(urlunsplit((parts.scheme, parts.netloc, f"{root}/props", "", "")),
                                     headers={"Accept": "application/json"})
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (the model's own endpoint)
            props = json.loads(response.read(1_000_000))
    except (urllib.error.URLError, OSError, ValueError):
        return None
    settings = props.get("default_generation_settings") if isinstance(props, dict) else None
    return _int(settings.get("n_ctx")) if isinstance(settings, dict) else None


_ERROR_LINE = re.compile(rb"[\r\n]error:")
_LINE_END = re.compile(rb"[\r\n]")


class StreamErrors:
    """The ``error:`` lines of a stream. llama-server (builds before mid-2025) answers a request it cannot
    take with 200, an ``error: {...}`` line and ``data: [DONE]``; the SDK's SSE decoder drops a field it does
    not know, so without this the stream looks empty, and an empty stream is retried."""

    LIMIT = 64 * 1024  # bytes of a line kept: an error's message is short

    def __init__(self) -> None:
        self.body: dict[str, Any] | None = None
        self._before = b"\n"  # the last bytes seen (the stream's start counts as a line's end)
        self._line: bytearray | None = None  # the error line read so far, once one began

    def watch(self, response: Any) -> None:
        """Read ``response``'s bytes as the SDK reads them (httpx's iter_bytes, already wrapped or not)."""
        read = response.iter_bytes

        def iter_bytes(*args: Any, **kwargs: Any) -> Any:
            for chunk in read(*args, **kwargs):
                if self.body is None:
                    self._feed(chunk)
                yield chunk

        response.iter_bytes = iter_bytes

    def _feed(self, chunk: bytes) -> None:
        # Every chunk of every stream passes here: a substring search, and work only once an error line begins.
        if self._line is None:
            seen = self._before + chunk
            self._before = seen[-8:]
            found = _ERROR_LINE.search(seen) if b"error:" in seen else None
            if found is None:
                return
            self._line = bytearray(seen[found.end():])
        else:
            self._line += chunk
        end = _LINE_END.search(self._line)
        if end is not None:
            self._take(bytes(self._line[:end.start()]))
        elif len(self._line) > self.LIMIT:
            self._line = None  # not an error's line after all: too long

    def _take(self, payload: bytes) -> None:
        try:
            data = json.loads(payload.decode("utf-8", "replace"))
        except ValueError:
            data = {"message": payload.decode("utf-8", "replace").strip()}
        if isinstance(data, dict):
            inner = data.get("error")
            self.body = inner if isinstance(inner, dict) else data
        else:
            self.body = {"message": str(data)}


def _first_number(patterns: tuple[re.Pattern[str], ...], texts: list[str]) -> int | None:
    for text in texts:
        for pattern in patterns:
            found = pattern.search(text)
            if found:
                return int(found[1])
    return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
