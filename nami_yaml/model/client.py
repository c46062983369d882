"""The Model protocol over any OpenAI-compatible Chat Completions endpoint.

``openai`` is imported only when a request is made: ``nami --help`` and ``nami tools ...`` never pay for it.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import json
import operator
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nami_yaml.errors import ConfigError
from nami_yaml.model.assembly import (
    BrokenResponse,
    EmptyStream,
    Silent,
    StreamAssembly,
    TextEcho,
    TooLarge,
    read_completion,
)
from nami_yaml.model.context_size import StreamErrors, lacks_window, nearby, overflow, published_context
from nami_yaml.model.error_body import server_detail
from nami_yaml.model.presets import resolve_quirks
from nami_yaml.model.request_body import BodyEncoder
from nami_yaml.model.types import AssistantTurn, ModelError
from nami_yaml.model.wire_limits import hold_error_body, hold_events, hold_silence
from nami_yaml.setting_defaults import LIMITS, MODEL

if TYPE_CHECKING:
    import openai

_RESERVED = frozenset({"model", "messages", "tools", "stream", "stream_options"})
# Options that are the SDK's, not the request body's: create()'s keyword -> the SDK's request option.
_SDK_OPTIONS = {"extra_headers": "headers", "extra_query": "params", "timeout": "timeout"}
_NO_KEY = "no-key"  # the SDK refuses to start without a key; keyless local servers ignore it
# Asks the SDK for the response unread (as its with_streaming_response does), so a body is read in pieces.
_UNREAD = {"X-Stainless-Raw-Response": "stream"}


class _ErrorEvent(Exception):
    """A stream that carried an ``error:`` line (llama-server) instead of an answer; ``body`` is its object."""

    def __init__(self, body: dict[str, Any]):
        super().__init__(str(body.get("message") or body))
        self.body = body


@dataclass(frozen=True)
class _Request:
    body: dict[str, Any]  # the JSON sent
    options: dict[str, Any]  # the SDK's request options (headers, params, timeout)


class OpenAIChatModel:
    """Streams (by default) one Chat Completions request per :meth:`complete` and assembles the turn."""

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        *,
        stream: bool = MODEL["stream"],  # the defaults are the model.* and limits.* settings'
        max_retries: int = MODEL["retries"],
        timeout: float = float(MODEL["timeout"]),
        temperature: float | None = None,
        options: dict[str, Any] | None = None,
        quirks: dict[str, Any] | None = None,
        max_response_bytes: int | None = LIMITS["max_response_bytes"],
    ):
        if not api_key and api_key_env:
            where = base_url or "the endpoint"
            raise ModelError(f"no API key for {where}: set ${api_key_env}")
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.stream = stream
        self.max_retries = max_retries
        self.timeout = timeout
        self.options = dict(options or {})
        reserved = sorted(set(self.options) & _RESERVED)
        if reserved:
            raise ConfigError(f"model option(s) {', '.join(reserved)} are set by nami, not by options")
        if temperature is not None:
            self.options["temperature"] = temperature
        self.quirks = resolve_quirks(quirks)
        # Bytes of text, reasoning and tool calls one response may bring (a streamed one), or of its body.
        self.max_response_bytes = max_response_bytes
        self._api_key = api_key or _NO_KEY
        self._sdk: openai.OpenAI | None = None
        # The messages of the last request as given, and as sent (see _messages).
        self._sent: tuple[list[dict[str, Any]], list[dict[str, Any]]] = ([], [])
        self._body = BodyEncoder()  # the request's bytes, each message encoded once
        self._takes_bytes = False  # whether the SDK's post() sends bytes given to it (content=)
        self.retry_delay = 0.5  # seconds before the first retry of a broken response; doubles each time

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIChatModel(model={self.model!r}, base_url={self.base_url!r})"

    # -- the Model protocol ---------------------------------------------------------------------
    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_text: Callable[[str], None] | None = None,
    ) -> AssistantTurn:
        import openai

        sdk = self._client()
        request = self._request(messages, tools)
        echo = TextEcho(on_text)
        streamed = self.stream
        for attempt in itertools.count():
            try:
                if streamed:
                    return self._complete_streamed(sdk, request, echo)
                return self._complete_once(sdk, _plain(request), echo)
            except TooLarge as exc:
                raise ModelError(f"the response from {self._where()} passed limits.max_response_bytes "
                                 f"({exc.limit:,} bytes) and was cut off there; nothing of it was kept. "
                                 "Raise the limit if the model's answers are really this long",
                                 kind="response_too_large") from None
            except Silent as exc:
                raise ModelError(f"the stream from {self._where()} said nothing for {exc.seconds:g} s (model.timeout), "
                                 "only keep-alives or empty events; it was closed and not retried. Try again, or "
                                 "raise model.timeout if the model really works that long in silence",
                                 kind="stream_silent") from None
            except _ErrorEvent as exc:
                # The server said why it stopped: retrying the same request would only hear it again.
                raise self._error_event(exc.body, request) from None
            except BrokenResponse as exc:
                # The server answered 200 and then broke off or sent garbage: retried like a 5xx.
                if attempt >= self.max_retries:
                    after = f"{_retries(attempt)} did not help" if attempt else "try again"
                    raise ModelError(self._clean(f"{exc}; {after}")) from None
                time.sleep(self.retry_delay * 2 ** attempt)
                echo.retry()
                streamed = streamed and not isinstance(exc, EmptyStream)
            except openai.APIError as exc:
                raise self._model_error(exc, request) from exc
            except openai.OpenAIError as exc:
                raise ModelError(self._clean(f"request to {self._where()} failed: {exc}")) from exc
        raise AssertionError("unreachable")

    # -- request --------------------------------------------------------------------------------
    def _client(self) -> openai.OpenAI:
        if self._sdk is None:
            import openai

            self._sdk = openai.OpenAI(api_key=self._api_key, base_url=self.base_url,
                                      max_retries=self.max_retries, timeout=self.timeout, http_client=_http_client())
            self._takes_bytes = "content" in inspect.signature(self._sdk.post).parameters
        return self._sdk

    def _request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> _Request:
        # Fixed key order: identical history gives identical request bytes, which prompt caches need.
        body: dict[str, Any] = {"model": self.model, "messages": self._messages(messages)}
        if tools:
            body["tools"] = tools
            if self.quirks["no_parallel_tool_calls"]:
                body["parallel_tool_calls"] = False
        sdk_options: dict[str, Any] = {}
        for key, value in self.options.items():
            if key in _SDK_OPTIONS:
                sdk_options[_SDK_OPTIONS[key]] = value
            elif key == "extra_body":
                continue
            else:  # server-specific options (top_k, min_p…) included: the body is sent as it is
                body[self.quirks["max_tokens_field"] if key == "max_tokens" else key] = value
        body.update(self.options.get("extra_body") or {})
        if self.stream:
            body["stream"] = True
            if self.quirks["stream_usage"]:
                body["stream_options"] = {"include_usage": True}
        return _Request(body, sdk_options)

    def _send(self, sdk: openai.OpenAI, request: _Request) -> Any:
        """POST the body as built, and read the reply as plain JSON. The SDK's ``chat.completions.create``
        would walk every message and tool definition against its type declarations on every request only
        to send the same JSON, and its typed stream builds an object of every chunk only for us to read a
        few fields: with a growing history that was most of nami's time per step (bench/: per step).
        ``cast_to=object`` keeps the SDK's retries, status errors, SSE decoding and error events, and
        hands each event over as the dict ``json.loads`` made of it (StreamAssembly reads dicts)."""
        from openai import Stream

        streamed = bool(request.body.get("stream"))
        return sdk.post("/chat/completions", **self._payload(request.body), options=request.options,  # type: ignore[arg-type]
                        cast_to=object, stream=streamed, stream_cls=Stream[object])

    def _payload(self, body: dict[str, Any]) -> dict[str, Any]:
        """The body's bytes, encoded here with each message encoded once (request_body.py), where the SDK's
        post() sends bytes as given (``content=``); for older SDKs, the body, which they encode."""
        try:
            content = self._body.encode(body)
        except (TypeError, ValueError) as exc:
            raise ModelError(f"the request to {self._where()} cannot be sent as JSON: {exc} (YAML reads an "
                             "unquoted date or time as one: quote it in model.options or the tool's parameters)") from None
        return {"content": content} if self._takes_bytes else {"body": body}

    def _read_body(self, sdk: openai.OpenAI, request: _Request) -> Any:
        """The body of a response that was not streamed, read in pieces up to max_response_bytes (the
        SDK would read all of it, however long, before handing it over), as JSON."""
        headers = {**(request.options.get("headers") or {}), **_UNREAD}
        response = self._send(sdk, _Request(request.body, {**request.options, "headers": headers}))
        body, limit = bytearray(), self.max_response_bytes
        try:
            if limit is None or _declared_within(response.headers, limit):
                body += response.read()  # in one piece, as the SDK reads it: HTTP holds it to its declared length
            else:
                for piece in response.iter_bytes():
                    body += piece
                    if limit is not None and len(body) > limit:
                        raise TooLarge(limit)
        except TooLarge:
            raise
        except Exception as exc:  # the transport's own errors (httpx's), the only thing this loop calls
            raise BrokenResponse(f"the body was cut short: {_root_cause(exc)}") from None
        finally:
            response.close()
        text = body.decode("utf-8")
        # As the SDK reads a body: JSON when the content type says so (else an error), else text.
        if response.headers.get("content-type", "").split(";")[0].strip().endswith("json"):
            return json.loads(text)
        return _json_body(text)

    def _messages(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # An assistant turn with only tool calls has no text. Strict servers (llama.cpp) refuse null
        # there; "" is accepted everywhere, so it is sent unless a provider's quirk asks for null.
        if not self.quirks["null_content_as_empty"]:
            return messages
        # The conversation only grows between requests: what was sent for its start is kept, and only the
        # new messages are looked at, unless the list no longer starts with the very same messages.
        source, sent = self._sent
        if len(messages) < len(source) or not all(map(operator.is_, source, messages)):
            source, sent = [], []
        for message in messages[len(source):]:
            source.append(message)
            sent.append({**message, "content": ""} if message.get("role") == "assistant"
                        and message.get("content") is None else message)
        self._sent = (source, sent)
        return sent

    # -- responses ------------------------------------------------------------------------------
    def _complete_streamed(self, sdk: openai.OpenAI, request: _Request, echo: TextEcho) -> AssistantTurn:
        assembly = StreamAssembly(self.max_response_bytes)
        errors = StreamErrors()
        # The context manager closes the HTTP response on any exit, KeyboardInterrupt included.
        with self._send(sdk, request) as stream, self._mid_stream(assembly, errors):
            hold_events(stream.response, self.max_response_bytes)  # what the SDK buffers before we see it
            hold_silence(stream.response, self.timeout, assembly.said)  # and what it drops
            errors.watch(stream.response)  # and the error lines it drops
            chunks = iter(stream)
            while True:
                try:
                    chunk = next(chunks)
                except StopIteration:
                    break
                except Silent:
                    if assembly.finish_reason is None:
                        raise
                    break  # the answer is whole; the server only failed to end the stream
                except (ValueError, TypeError) as exc:  # the SDK could not decode an event (bad JSON or UTF-8)
                    raise BrokenResponse(f"malformed stream from {self._where()}: event {assembly.events + 1} "
                                         f"{_decode_problem(exc)}") from None
                try:
                    pieces = assembly.feed(chunk)
                except BrokenResponse as exc:
                    raise BrokenResponse(f"malformed stream from {self._where()}: {exc}") from None
                for piece in pieces:
                    echo(piece)
            if errors.body is not None and assembly.finish_reason is None:
                raise _ErrorEvent(errors.body)
        return assembly.turn(self._where())

    def _complete_once(self, sdk: openai.OpenAI, request: _Request, echo: TextEcho) -> AssistantTurn:
        try:
            turn = read_completion(self._read_body(sdk, request))
        except (ValueError, TypeError) as exc:
            raise BrokenResponse(f"malformed response from {self._where()}: the body {_decode_problem(exc)}") from None
        except BrokenResponse as exc:
            raise BrokenResponse(f"malformed response from {self._where()}: {exc}") from None
        if turn.content:
            echo(turn.content)
        return turn

    # -- errors ---------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _mid_stream(self, assembly: StreamAssembly, errors: StreamErrors) -> Iterator[None]:
        """A dropped connection after the response began is not "cannot reach": a stream cut short (unless
        the server said why first)."""
        import openai

        try:
            yield
        except openai.APITimeoutError:
            raise
        except (BrokenResponse, openai.APIConnectionError) as exc:
            if errors.body is not None and assembly.finish_reason is None:
                raise _ErrorEvent(errors.body) from None
            if isinstance(exc, BrokenResponse):
                raise
            cause = f"; connection lost: {_root_cause(exc)}"
            raise assembly.cut_short(self._where(), cause) from exc

    def _where(self) -> str:
        if self._sdk is not None:
            return str(self._sdk.base_url).rstrip("/")
        return (self.base_url or "https://api.openai.com/v1").rstrip("/")

    def _model_error(self, exc: openai.APIError, request: _Request) -> ModelError:
        import openai

        where = self._where()
        if isinstance(exc, openai.APITimeoutError):
            return ModelError(f"request to {where} timed out after {self.timeout:g} s "
                              f"(after {_retries(self.max_retries)}); try again or raise the timeout")
        if isinstance(exc, openai.APIConnectionError):
            return ModelError(self._clean(f"cannot reach {where}: {_root_cause(exc)}; is the server running?"))
        if not isinstance(exc, openai.APIStatusError):  # a `data: {"error": ...}` event
            return self._error_event(exc.body if isinstance(exc.body, dict) else {"message": exc.message}, request)
        status = exc.status_code
        detail = server_detail(exc.body, exc.response.reason_phrase or "no details")
        retried = 0 if exc.response.headers.get("x-should-retry") == "false" else self.max_retries
        if status == 401:
            key = f"${self.api_key_env}" if self.api_key_env else "your configuration"
            text = f"authentication failed (401) at {where}: check the API key in {key}"
        elif status == 403:
            text = f"permission denied (403) at {where}: {detail}; check the key's access to {self.model!r}"
        elif status == 404:
            text = (f"not found (404) at {where}: {detail}; check the model name {self.model!r} "
                    f"and that base_url points at the API (often ending in /v1)")
        elif status == 429:
            text = f"rate limited (429) at {where} after {_retries(retried)}: {detail}; wait and try again"
        elif status in (400, 413, 422) and _context_length(status, exc.body, detail):
            return self._overflow(status, exc.body, detail, request)
        elif "requires --jinja" in detail:  # llama-server started without it refuses every request with tools
            text = (f"{where} takes no tools as it was started ({status}): {detail}; start llama-server with --jinja "
                    "(docs/config.md: Local models with llama.cpp)")
        elif status in (400, 413, 422):
            text = f"request rejected ({status}) by {where}: {detail}"
        elif status >= 500:
            text = f"server error ({status}) at {where} after {_retries(retried)}: {detail}; try again later"
        else:
            text = f"unexpected response ({status}) from {where}: {detail}"
        return ModelError(self._clean(text), status=status)

    def _error_event(self, body: dict[str, Any], request: _Request) -> ModelError:
        """An error the server sent inside a stream (an ``error:`` line, or an event with an ``error``)."""
        detail = server_detail(body, "no details")
        code = body.get("code")
        status = code if isinstance(code, int) and not isinstance(code, bool) else None
        if _context_length(status, body, detail):
            return self._overflow(status or "in the stream", body, detail, request)
        return ModelError(self._clean(f"error from {self._where()} while streaming: {detail}"), status=status)

    def _overflow(self, status: int | str, body: Any, detail: str, request: _Request) -> ModelError:
        """The request is longer than the server's context: its size and the server's, and what to change.
        Not retried (the same request would be refused again); the loop may compact the history once."""
        published = None
        if lacks_window(body, detail) and nearby(self._where()):  # llama-server publishes it, others 404
            published = published_context(self._where(), None if self._api_key == _NO_KEY else self._api_key)
        size = len(json.dumps(request.body, ensure_ascii=False, default=str))
        found = overflow(body, detail, size, published, nearby=nearby(self._where()))
        return ModelError(self._clean(found.message(self._where(), status)), status=status if isinstance(status, int)
                          else None, kind="context_length", context_window=found.window)

    def _clean(self, text: str) -> str:
        """One line, bounded, and never the key (servers sometimes echo it back)."""
        if self._api_key != _NO_KEY and len(self._api_key) >= 4:
            text = text.replace(self._api_key, "***")
        text = re.sub(r"\s+", " ", text).strip()
        return text if len(text) <= 500 else text[:497] + "..."


def _plain(request: _Request) -> _Request:
    """The request not streamed (a retry of a stream that said nothing is asked for whole)."""
    if not request.body.get("stream"):
        return request
    return _Request({k: v for k, v in request.body.items() if k not in ("stream", "stream_options")}, request.options)


def _declared_within(headers: Any, limit: int) -> bool:
    """Whether a body says up front that it is at most ``limit`` bytes as read: a Content-Length within it,
    and no content encoding (a compressed body may unpack to any size)."""
    length = headers.get("content-length", "")
    encoding = headers.get("content-encoding", "").strip().lower()
    return length.isascii() and length.isdigit() and int(length) <= limit and encoding in ("", "identity")


def _json_body(reply: str) -> Any:
    """A JSON body under another content type is still read (as typed responses were), and other text is
    left for read_completion to name."""
    try:
        return json.loads(reply)
    except ValueError:
        return reply


def _retries(n: int) -> str:
    return "1 retry" if n == 1 else f"{n} retries"


def _decode_problem(exc: Exception) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "is not valid UTF-8"
    if isinstance(exc, ValueError):
        return f"is not JSON ({exc})"
    return f"could not be read ({exc})"


# How each preset's server says a prompt is too long: OpenAI (code context_length_exceeded), DeepSeek and
# vLLM ("maximum context length is N tokens", "longer than the maximum model length"), llama.cpp (type
# exceed_context_size_error, "exceeds the available context size"), and 413 from any proxy in between.
_CONTEXT_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error", "context_window_exceeded"})
_CONTEXT_TEXT = re.compile(r"maximum context length|context[ _]length[ _]exceeded|exceeds? the (?:available )?context"
                           r"|context window|longer than the maximum model length|prompt is too long"
                           r"|too many tokens|reduce the length of the (?:messages|prompt)", re.I)


def _context_length(status: int | None, body: Any, detail: str) -> bool:
    fields = body if isinstance(body, dict) else {}
    codes = {str(fields.get("code")), str(fields.get("type"))}
    return status == 413 or bool(codes & _CONTEXT_CODES) or bool(_CONTEXT_TEXT.search(detail))


def _root_cause(exc: BaseException) -> str:
    cause: BaseException = exc
    while cause.__cause__ is not None or cause.__context__ is not None:
        cause = cause.__cause__ or cause.__context__  # type: ignore[assignment]
    return str(cause) or type(cause).__name__


def import_sdk() -> None:
    """Import the openai SDK (and its HTTP client class) now rather than at the first request: for a process
    that others are forked from (batch workers' warm server), which then never import it again. One client
    is made and closed: its HTTP library imports its transport (and what that finds installed, such as trio)
    only when a client is made, which was two thirds of each forked task's CPU (bench/batch.py)."""
    made = _http_client()
    if made is not None:
        made.close()


@functools.cache
def _http_client_class() -> type | None:
    import openai

    base = getattr(openai, "DefaultHttpxClient", None)  # the SDK's HTTP client with the SDK's defaults
    if base is None:
        return None

    class HttpClient(base):  # type: ignore[misc, valid-type]
        def __del__(self) -> None:  # closed with the model, as the SDK closes the client it makes itself
            try:
                if not self.is_closed:
                    self.close()
            except Exception:
                pass

    return HttpClient


def _http_client() -> Any:
    """The SDK's own HTTP client, whose error responses' bodies are held to a size (model/wire_limits.py);
    None (the SDK makes its own) where the SDK has no such class."""
    made = _http_client_class()
    return None if made is None else made(event_hooks={"response": [hold_error_body]})
