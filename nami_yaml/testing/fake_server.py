"""A scripted, OpenAI-compatible Chat Completions server for offline tests and demos (stdlib only).

Run ``python -m nami_yaml.testing --port 8765 [--script script.json]`` to try nami offline.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["FakeOpenAIServer", "RecordedRequest", "ScriptedCall", "ScriptedResponse", "call", "demo_responder",
           "error", "response_from_dict", "text", "tool_calls", "usage"]

_AUTO: Any = object()  # "compute usage from the request", distinct from None ("send no usage at all")


@dataclass
class ScriptedCall:
    name: str
    arguments: str  # sent exactly as given, so tests can script malformed JSON
    id: str | None = None


@dataclass
class ScriptedResponse:
    """One reply the server gives, in order. Build with :func:`text`, :func:`tool_calls`, :func:`error`."""

    content: str | None = None
    calls: list[ScriptedCall] = field(default_factory=list)
    finish_reason: str | None = None  # None: "tool_calls" when there are calls, else "stop"
    usage: dict[str, Any] | None = _AUTO
    reasoning: str | None = None  # DeepSeek-style reasoning_content
    delay: float = 0.0  # seconds before the response starts
    chunk_delay: float = 0.0  # seconds between streamed chunks
    status: int = 200
    error_body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    drop_after: int | None = None  # streamed chunks sent before the connection is cut mid-response


Responder = Callable[[dict[str, Any]], "ScriptedResponse | str | None"]


def call(name: str, arguments: dict[str, Any] | str | None = None, *, id: str | None = None) -> ScriptedCall:
    """A tool call; a dict is JSON-encoded, a string is sent verbatim (malformed JSON allowed)."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return ScriptedCall(name=name, arguments=args, id=id)


def text(content: str, **options: Any) -> ScriptedResponse:
    return ScriptedResponse(content=content, **options)


def tool_calls(*calls: ScriptedCall, content: str | None = None, **options: Any) -> ScriptedResponse:
    return ScriptedResponse(content=content, calls=list(calls), **options)


def error(status: int, message: str, *, type: str | None = None, code: str | None = None,
          retry_after: float | None = None, **options: Any) -> ScriptedResponse:
    """An HTTP error with an OpenAI-style body. ``retry_after`` (seconds) sets ``retry-after-ms``,
    which the SDK honours, so retry tests need not wait for its default backoff."""
    headers = dict(options.pop("headers", {}))
    if retry_after is not None:
        headers["retry-after-ms"] = str(int(retry_after * 1000))
    body = {"error": {"message": message, "type": type or _error_type(status), "param": None, "code": code}}
    return ScriptedResponse(status=status, error_body=body, headers=headers, **options)


def usage(prompt: int = 10, completion: int = 5, cached: int = 0, *, reasoning: int = 0,
          style: str = "openai") -> dict[str, Any]:
    """A usage object; ``style="deepseek"`` reports cache hits the way DeepSeek does. ``reasoning``
    tokens are part of ``completion``, as providers count them."""
    data: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                            "total_tokens": prompt + completion}
    if reasoning:
        data["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    if style == "deepseek":
        data["prompt_cache_hit_tokens"] = cached
        data["prompt_cache_miss_tokens"] = prompt - cached
    else:
        data["prompt_tokens_details"] = {"cached_tokens": cached}
    return data


def response_from_dict(data: dict[str, Any] | str) -> ScriptedResponse:
    """The JSON script format: ``"hi"``, ``{"content": ...}``, ``{"tool_calls": [{"name", "arguments"}]}``,
    ``{"error": {"status": 500, "message": "boom"}}``, plus the ScriptedResponse option names."""
    if isinstance(data, str):
        return text(data)
    data = dict(data)
    if "error" in data:
        err = data.pop("error")
        return error(int(err.get("status", 500)), str(err.get("message", "error")), **data)
    calls = [call(c["name"], c.get("arguments"), id=c.get("id")) for c in data.pop("tool_calls", [])]
    return ScriptedResponse(calls=calls, **data)


def _error_type(status: int) -> str:
    if status == 429:
        return "rate_limit_error"
    if status in (401, 403):
        return "authentication_error"
    return "invalid_request_error" if status < 500 else "server_error"


class RecordedRequest(dict):  # type: ignore[type-arg]
    """The parsed JSON body of a request (so ``req["messages"]`` works), plus how it arrived."""

    def __init__(self, body: dict[str, Any], *, path: str, headers: dict[str, str], raw: bytes):
        super().__init__(body)
        self.path = path
        self.headers = headers  # lower-cased names
        self.raw = raw


def text_pieces(content: str) -> list[str]:
    # Word-sized deltas, like real servers: several of them for any multi-word text.
    return re.findall(r"\s*\S+\s*|\s+", content) or [content]


def _split(text_: str, parts: int = 3) -> list[str]:
    size = max(1, -(-len(text_) // parts))
    return [text_[i:i + size] for i in range(0, len(text_), size)]


def protocol_problem(body: dict[str, Any]) -> str | None:
    """What a strict real server (DeepSeek, OpenAI) would reject with a 400, or None."""
    if not isinstance(body.get("model"), str):
        return "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages must be a non-empty array"
    pending: set[str] = set()
    for i, msg in enumerate(messages):
        role = msg.get("role") if isinstance(msg, dict) else None
        if role not in ("system", "developer", "user", "assistant", "tool"):
            return f"messages[{i}]: invalid role {role!r}"
        if role != "tool" and pending:
            return (f"messages[{i}]: an assistant message with 'tool_calls' must be followed by tool "
                    f"messages responding to each 'tool_call_id' (missing: {', '.join(sorted(pending))})")
        if "reasoning_content" in msg:
            return f"messages[{i}]: reasoning_content must not be sent back in input messages"
        if role == "assistant":
            pending = {c.get("id") for c in msg.get("tool_calls") or []}
        elif role == "tool":
            if msg.get("tool_call_id") not in pending:
                return (f"messages[{i}]: messages with role 'tool' must be a response to a preceding "
                        f"message with 'tool_calls' (unknown tool_call_id {msg.get('tool_call_id')!r})")
            pending.discard(msg["tool_call_id"])
    if pending:
        return f"tool calls without a tool message answering them: {', '.join(sorted(pending))}"
    for i, tool in enumerate(body.get("tools") or []):
        if not (isinstance(tool, dict) and tool.get("type") == "function"
                and isinstance(tool.get("function", {}).get("name"), str)):
            return f"tools[{i}]: expected {{'type': 'function', 'function': {{'name': ...}}}}"
    if "tools" in body and not body["tools"]:
        return "tools: empty array is invalid, omit the parameter instead"
    return None


class FakeOpenAIServer:
    """A real HTTP server on 127.0.0.1 replaying scripted responses in order.

    ``requests`` holds each chat request (a :class:`RecordedRequest`); ``raw_requests`` their exact
    bytes. When the script runs out, ``responder`` (if given) answers; otherwise a 500 says so, marked
    not-retryable so the SDK fails at once instead of retrying.
    """

    def __init__(self, script: Iterable[ScriptedResponse | str] = (), *, responder: Responder | None = None,
                 host: str = "127.0.0.1", port: int = 0, models: Iterable[str] = ("fake-model",),
                 strict: bool = True):
        self._lock = threading.Lock()
        self._script: deque[ScriptedResponse] = deque()
        self.add(*script)
        self.responder = responder
        self.models = list(models)
        self.strict = strict
        self.requests: list[RecordedRequest] = []
        self._served = 0
        self._closed = threading.Event()
        self._ids = itertools.count(1)
        self._httpd = ThreadingHTTPServer((host, port), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- script -------------------------------------------------------------------------------
    def add(self, *responses: ScriptedResponse | str) -> FakeOpenAIServer:
        with self._lock:
            self._script.extend(text(r) if isinstance(r, str) else r for r in responses)
        return self

    @property
    def remaining(self) -> int:
        return len(self._script)

    @property
    def raw_requests(self) -> list[bytes]:
        return [r.raw for r in self.requests]

    # -- lifecycle ----------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{self._httpd.server_address[0]}:{self.port}/v1"

    def start(self) -> FakeOpenAIServer:
        if self._thread is None:
            self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                            name=f"fake-openai-{self.port}", daemon=True)
            self._thread.start()
        return self

    def close(self) -> None:
        self._closed.set()  # wakes handlers sleeping in delay/chunk_delay
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
        self._httpd.server_close()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- called by the handler ----------------------------------------------------------------
    def _next_response(self, body: dict[str, Any]) -> ScriptedResponse:
        with self._lock:
            self._served += 1
            served = self._served
            if self._script:
                return self._script.popleft()
        if self.responder is not None:
            answer = self.responder(body)
            if answer is not None:
                return text(answer) if isinstance(answer, str) else answer
        return error(500, f"FakeOpenAIServer: script exhausted: request #{served} has no scripted response "
                          f"(add more with server.add(...) or pass responder=)",
                     type="fake_server_script_exhausted", headers={"x-should-retry": "false"})

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _new_id(self) -> str:
        return f"chatcmpl-fake{next(self._ids)}"

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless the server closes first; False means stop responding."""
        return not (seconds > 0 and self._closed.wait(seconds))


# -- wire format ------------------------------------------------------------------------------------

def _usage_for(resp: ScriptedResponse, raw: bytes) -> dict[str, Any] | None:
    if resp.usage is not _AUTO:
        return resp.usage
    produced = len(resp.content or "") + sum(len(c.arguments) + len(c.name) for c in resp.calls)
    return usage(prompt=max(1, len(raw) // 4), completion=max(1, produced // 4))


def _call_ids(resp: ScriptedResponse, completion_id: str) -> list[str]:
    number = completion_id.rsplit("fake", 1)[-1]
    return [c.id or f"call_{number}_{i}" for i, c in enumerate(resp.calls)]


def _finish_reason(resp: ScriptedResponse) -> str:
    return resp.finish_reason or ("tool_calls" if resp.calls else "stop")


def completion_body(resp: ScriptedResponse, *, model: str, completion_id: str, raw: bytes) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": resp.content}
    if resp.reasoning is not None:
        message["reasoning_content"] = resp.reasoning
    if resp.calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for cid, c in zip(_call_ids(resp, completion_id), resp.calls, strict=True)
        ]
    body: dict[str, Any] = {
        "id": completion_id, "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": _finish_reason(resp)}],
    }
    u = _usage_for(resp, raw)
    if u is not None:
        body["usage"] = u
    return body


def stream_chunks(resp: ScriptedResponse, *, model: str, completion_id: str, raw: bytes,
                  include_usage: bool) -> Iterator[dict[str, Any]]:
    """The chunk objects of a streamed response, split the way real servers split them."""
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    for piece in text_pieces(resp.reasoning) if resp.reasoning else []:
        yield chunk({"reasoning_content": piece})
    for piece in text_pieces(resp.content) if resp.content else []:
        yield chunk({"content": piece})
    ids = _call_ids(resp, completion_id)
    for i, (cid, c) in enumerate(zip(ids, resp.calls, strict=True)):
        yield chunk({"tool_calls": [{"index": i, "id": cid, "type": "function",
                                     "function": {"name": c.name, "arguments": ""}}]})
    # Argument fragments interleave across calls by index, the hardest order for a client to assemble.
    fragments = [_split(c.arguments) for c in resp.calls]
    for round_ in itertools.zip_longest(*fragments):
        for i, frag in enumerate(round_):
            if frag is not None:
                yield chunk({"tool_calls": [{"index": i, "function": {"arguments": frag}}]})
    yield chunk({}, _finish_reason(resp))
    u = _usage_for(resp, raw)
    if include_usage and u is not None:
        yield {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model,
               "choices": [], "usage": u}


def _make_handler(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "FakeOpenAI/1.0"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # tests and the CLI stay quiet; requests are recorded instead

        def _route(self) -> str:
            path = self.path.split("?", 1)[0].rstrip("/")
            return path[3:] if path.startswith("/v1/") else path

        def do_GET(self) -> None:
            if self._route() == "/models":
                data = [{"id": m, "object": "model", "created": 0, "owned_by": "nami-fake"} for m in server.models]
                self._send_json(200, {"object": "list", "data": data})
            else:
                self._send_error(404, f"no route for GET {self.path}")

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            if self._route() != "/chat/completions":
                self._send_error(404, f"no route for POST {self.path}")
                return
            try:
                body = json.loads(raw)
                if not isinstance(body, dict):
                    raise ValueError("body is not a JSON object")
            except ValueError as exc:
                self._send_error(400, f"request body is not valid JSON: {exc}")
                return
            headers = {k.lower(): v for k, v in self.headers.items()}
            server._record(RecordedRequest(body, path=self.path, headers=headers, raw=raw))
            problem = protocol_problem(body) if server.strict else None
            if problem:
                self._send_error(400, problem)
                return
            resp = server._next_response(body)
            if not server._sleep(resp.delay):
                return
            if resp.status >= 400:
                self._send_json(resp.status, resp.error_body or {"error": {"message": "error"}}, resp.headers)
                return
            model = str(body.get("model"))
            if body.get("stream"):
                include = bool((body.get("stream_options") or {}).get("include_usage"))
                self._stream(resp, stream_chunks(resp, model=model, completion_id=server._new_id(), raw=raw,
                                                 include_usage=include))
            else:
                self._send_json(resp.status, completion_body(resp, model=model, completion_id=server._new_id(),
                                                             raw=raw), resp.headers)

        def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                self.close_connection = True  # client went away (timeout, cancelled): nothing to tell

        def _send_error(self, status: int, message: str) -> None:
            self._send_json(status, error(status, message).error_body or {})

        def _stream(self, resp: ScriptedResponse, chunks: Iterator[dict[str, Any]]) -> None:
            # Chunked encoding, so a cut connection (drop_after) is a visible protocol error to the client.
            self.close_connection = True
            try:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.send_header("connection", "close")
                for k, v in resp.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                events = (f"data: {json.dumps(c)}\n\n" for c in chunks)
                for n, event in enumerate(itertools.chain(events, ["data: [DONE]\n\n"])):
                    if resp.drop_after is not None and n >= resp.drop_after:
                        return
                    if n and not server._sleep(resp.chunk_delay):
                        return
                    data = event.encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                pass  # the client closed the stream (KeyboardInterrupt, timeout): expected

    return Handler


def demo_responder(body: dict[str, Any]) -> ScriptedResponse:
    """Answers every request with text, echoing the last user message: enough to try the CLI offline."""
    said = next((m.get("content") for m in reversed(body.get("messages", []))
                 if isinstance(m, dict) and m.get("role") == "user"), "")
    return text(f"Hello from the nami fake server. You said: {said}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nami_yaml.testing",
                                     description="Serve a scripted OpenAI-compatible Chat Completions API.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765, help="0 picks a free port")
    parser.add_argument("--script", type=Path, help="JSON list of responses; without it, a demo echo answers")
    args = parser.parse_args(argv)
    script = [response_from_dict(r) for r in json.loads(args.script.read_text())] if args.script else []
    server = FakeOpenAIServer(script, responder=None if args.script else demo_responder,
                              host=args.host, port=args.port)
    stop = threading.Event()
    # SIGTERM as well as Ctrl-C: a shell running us in the background makes us ignore SIGINT.
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server.start()
    sys.stdout.write(f"{server.base_url}\n")
    sys.stdout.flush()
    try:
        while not stop.wait(1.0):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
