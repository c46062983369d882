"""A scripted, OpenAI-compatible Chat Completions server for offline tests and demos (stdlib only).

Run ``python -m nami_yaml.testing --port 8765 [--script script.json]`` to try nami offline. The responses
and their builders live in ``responses``, the wire format in ``wire``, the choice of response per request
in ``routing``, and the checked script file format in ``script_file``.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from nami_yaml.testing.responses import (
    ScriptedCall,
    ScriptedResponse,
    call,
    error,
    response_from_dict,
    text,
    tool_calls,
    usage,
)
from nami_yaml.testing.routing import Scripted, ScriptRouter
from nami_yaml.testing.wire import (
    completion_body,
    completion_bytes,
    null_content_problem,
    protocol_problem,
    stream_chunks,
    stream_payloads,
    text_pieces,
)

__all__ = ["FakeOpenAIServer", "RecordedRequest", "ScriptedCall", "ScriptedResponse", "call",
           "completion_body", "demo_responder", "error", "protocol_problem", "response_from_dict", "stream_chunks",
           "text", "text_pieces", "tool_calls", "usage"]

Responder = Callable[[dict[str, Any]], "ScriptedResponse | str | None"]
OVERFLOW_STYLES = ("status", "plain", "event", "python")


class RecordedRequest(dict):  # type: ignore[type-arg]
    """The parsed JSON body of a request (so ``req["messages"]`` works), plus how it arrived."""

    def __init__(self, body: dict[str, Any], *, path: str, headers: dict[str, str], raw: bytes,
                 arrived: float | None = None):
        super().__init__(body)
        self.path = path
        self.headers = headers  # lower-cased names
        self.raw = raw
        # When its whole body had been read (time.monotonic()): the time between two requests of a client
        # is what one step costs it, whatever it does between them (bench/steps.py).
        self.arrived = time.monotonic() if arrived is None else arrived
        # When each streamed event was handed to the socket (time.monotonic(), taken just before the write,
        # so a client cannot read an event before its time): lets a benchmark time how long a client takes
        # to show what arrived. Empty for responses that were not streamed.
        self.chunk_times: list[float] = []


class FakeOpenAIServer:
    """A real HTTP server on 127.0.0.1 replaying scripted responses.

    ``script`` is answered in order, whoever asks; ``runs`` gives each new conversation the next script of
    its own; ``tasks`` maps a substring of a run's first user message to its script (see ``routing``).
    ``requests`` holds each chat request (a :class:`RecordedRequest`); ``raw_requests`` their exact bytes.
    When a script runs out, ``responder`` (if given) answers; otherwise a 500 says so, marked not-retryable
    so the SDK fails at once instead of retrying.

    ``strict`` refuses what OpenAI and DeepSeek refuse (400); ``refuse_null_content`` also refuses an
    assistant message whose content is null, with the 500 a llama.cpp Python server gives.

    ``context_size`` (tokens; the fake counts four bytes of the request body a token) makes it a llama.cpp
    server started with ``-c context_size``: ``GET /props`` publishes it, and a longer request is refused as
    llama-server refuses it, by ``overflow``: ``"status"`` (400, ``exceed_context_size_error`` with
    ``n_prompt_tokens`` and ``n_ctx``), ``"plain"`` (the same 400 without the numbers, as older builds), or
    ``"event"`` (a stream begun with 200 that says only ``error: {...}`` and ``data: [DONE]``, as builds before
    mid-2025 answer a streamed request); ``"python"`` answers as llama-cpp-python's server: 400
    ``context_length_exceeded`` worded as OpenAI words it, and a stream begun with 200 and dropped before its
    first event. ``publish_context=False`` answers /props with 404, as servers other than llama-server.
    """

    def __init__(self, script: Iterable[Scripted] = (), *, responder: Responder | None = None,
                 host: str = "127.0.0.1", port: int = 0, models: Iterable[str] = ("fake-model",),
                 strict: bool = True, refuse_null_content: bool = False,
                 runs: Iterable[Iterable[Scripted]] = (), tasks: Mapping[str, Iterable[Scripted]] | None = None,
                 context_size: int | None = None, overflow: str = "status", publish_context: bool = True):
        self._lock = threading.Lock()
        self._router = ScriptRouter()
        self.add(*script)
        for run in runs:
            self.add_run(*run)
        for substring, responses in (tasks or {}).items():
            self.add_task(substring, *responses)
        self.responder = responder
        self.models = list(models)
        self.strict = strict
        self.refuse_null_content = refuse_null_content
        if overflow not in OVERFLOW_STYLES:
            raise ValueError(f"overflow must be one of {', '.join(OVERFLOW_STYLES)}, not {overflow!r}")
        self.context_size, self.overflow, self.publish_context = context_size, overflow, publish_context
        self.requests: list[RecordedRequest] = []
        self._served = 0
        self._closed = threading.Event()
        self._ids = itertools.count(1)
        self._httpd = ThreadingHTTPServer((host, port), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- script -------------------------------------------------------------------------------
    def add(self, *responses: Scripted) -> FakeOpenAIServer:
        """Responses answered in order, by whichever request comes next."""
        self._router.add(responses)
        return self

    def add_run(self, *responses: Scripted) -> FakeOpenAIServer:
        """The script of the next conversation to start (its later requests continue it)."""
        self._router.add_run(responses)
        return self

    def add_task(self, substring: str, *responses: Scripted) -> FakeOpenAIServer:
        """The script of every run whose first user message contains ``substring``."""
        self._router.add_task(substring, responses)
        return self

    @property
    def remaining(self) -> int:
        return self._router.remaining

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
        response, why = self._router.next_for(body)
        if response is not None:
            return response
        if self.responder is not None:
            answer = self.responder(body)
            if answer is not None:
                return text(answer) if isinstance(answer, str) else answer
        return error(500, f"FakeOpenAIServer: {why}: request #{served} has no scripted response "
                          f"(add more with server.add(...) or pass responder=)",
                     type="fake_server_script_exhausted", headers={"x-should-retry": "false"})

    def _problem(self, body: dict[str, Any]) -> tuple[int, str] | None:
        problem = protocol_problem(body) if self.strict else None
        if problem:
            return 400, problem
        problem = null_content_problem(body) if self.refuse_null_content else None
        return (500, problem) if problem else None

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _new_id(self) -> str:
        return f"chatcmpl-fake{next(self._ids)}"

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless the server closes first; False means stop responding."""
        return not (seconds > 0 and self._closed.wait(seconds))


def _make_handler(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "FakeOpenAI/1.0"
        # Headers and body go out in two writes; with Nagle's algorithm on, a kept-alive connection then
        # waits for the client's delayed ACK (40 ms on Linux) before every plain response.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            pass  # tests and the CLI stay quiet; requests are recorded instead

        def _route(self) -> str:
            path = self.path.split("?", 1)[0].rstrip("/")
            return path[3:] if path.startswith("/v1/") else path

        def do_GET(self) -> None:
            if self._route() == "/models":
                data = [{"id": m, "object": "model", "created": 0, "owned_by": "nami-fake"} for m in server.models]
                self._send_json(200, {"object": "list", "data": data})
            elif self._route() == "/props" and server.context_size and server.publish_context:
                self._send_json(200, {"default_generation_settings": {"n_ctx": server.context_size},
                                      "total_slots": 1, "model_path": "fake-model.gguf"})
            else:
                self._send_error(404, f"no route for GET {self.path}")

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            arrived = time.monotonic()
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
            recorded = RecordedRequest(body, path=self.path, headers=headers, raw=raw, arrived=arrived)
            server._record(recorded)
            problem = server._problem(body)
            if problem:
                self._send_error(*problem)
                return
            tokens = len(raw) // 4
            if server.context_size and tokens > server.context_size:
                self._refuse_as_llama_cpp(tokens, bool(body.get("stream")))
                return
            resp = server._next_response(body)
            if not server._sleep(resp.delay):
                return
            if resp.status >= 400:
                self._send_json(resp.status, resp.error_body or {"error": {"message": "error"}}, resp.headers)
                return
            model, completion_id = str(body.get("model")), server._new_id()
            if body.get("stream"):
                include = bool((body.get("stream_options") or {}).get("include_usage"))
                chunks = stream_chunks(resp, model=model, completion_id=completion_id, raw=raw,
                                       include_usage=include)
                self._stream(resp, stream_payloads(resp, chunks, completion_id), recorded.chunk_times)
            else:
                self._send_bytes(resp.status, completion_bytes(resp, model=model, completion_id=completion_id,
                                                               raw=raw), resp.headers)

        def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            self._send_bytes(status, json.dumps(payload).encode(), headers)

        def _send_bytes(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
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

        def _refuse_as_llama_cpp(self, tokens: int, streamed: bool) -> None:
            assert server.context_size is not None
            if server.overflow == "python":
                if streamed:
                    self.close_connection = True
                    with contextlib.suppress(OSError):
                        self.send_response(200)
                        self.send_header("content-type", "text/event-stream")
                        self.send_header("transfer-encoding", "chunked")
                        self.end_headers()
                        self.wfile.flush()
                    return  # the connection closes without the chunked body's end: cut short
                self._send_json(400, {"error": {
                    "message": f"This model's maximum context length is {server.context_size} tokens. However, you "
                               f"requested {tokens} tokens ({tokens} in the messages, None in the completion). Please "
                               "reduce the length of the messages or completion.",
                    "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
                return
            if server.overflow == "plain":
                problem = {"code": 400, "message": "the request exceeds the available context size, try increasing it",
                           "type": "exceed_context_size_error"}
            else:
                problem = {"code": 400, "message": f"request ({tokens} tokens) exceeds the available context size "
                                                   f"({server.context_size} tokens), try increasing it",
                           "type": "exceed_context_size_error", "n_prompt_tokens": tokens,
                           "n_ctx": server.context_size}
            if server.overflow != "event" or not streamed:
                self._send_json(400, {"error": problem})
                return
            self.close_connection = True
            data = b"error: " + json.dumps(problem).encode() + b"\n\ndata: [DONE]\n\n"
            try:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                pass

        def _send_error(self, status: int, message: str) -> None:
            self._send_json(status, error(status, message).error_body or {})

        def _stream(self, resp: ScriptedResponse, payloads: Iterator[bytes], times: list[float]) -> None:
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
                for n, payload in enumerate(payloads):
                    if resp.drop_after is not None and n >= resp.drop_after:
                        return
                    if n and not server._sleep(resp.chunk_delay):
                        return
                    data = b"data: " + payload + b"\n\n"
                    times.append(time.monotonic())
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
    parser.add_argument("--script", type=Path, help="JSON script: a list of responses, {\"runs\": [...]} or "
                                                    "{\"tasks\": {...}}; without it, a demo echo answers")
    parser.add_argument("--refuse-null-content", action="store_true",
                        help="refuse assistant messages with null content, as llama.cpp's Python server does")
    args = parser.parse_args(argv)
    if args.script:
        from nami_yaml.errors import SpecError
        from nami_yaml.testing.script_file import load_script

        try:
            plan = load_script(args.script)
        except SpecError as exc:
            sys.stderr.write(f"{exc}\n")
            return 2
        server = FakeOpenAIServer(plan.responses, runs=plan.runs, tasks=plan.tasks, host=args.host,
                                  port=args.port, refuse_null_content=args.refuse_null_content)
    else:
        server = FakeOpenAIServer(responder=demo_responder, host=args.host, port=args.port,
                                  refuse_null_content=args.refuse_null_content)
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
