"""OpenAIChatModel against the fake server, through the real openai SDK and real HTTP."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading

import pytest

from nami_yaml.model import ModelError, OpenAIChatModel
from nami_yaml.testing import FakeOpenAIServer, call, error, text, tool_calls, usage

USER = [{"role": "user", "content": "hi"}]
TOOLS = [{"type": "function", "function": {"name": "read_file", "description": "read",
                                           "parameters": {"type": "object", "properties": {}}}}]
SECRET = "sk-very-secret-key-123456"


def model_for(server: FakeOpenAIServer, **kwargs: object) -> OpenAIChatModel:
    kwargs.setdefault("max_retries", 0)
    return OpenAIChatModel("fake-model", server.base_url, "sk-test", **kwargs)  # type: ignore[arg-type]


def test_streamed_text_calls_on_text_per_delta_and_collects_usage() -> None:
    deltas: list[str] = []
    with FakeOpenAIServer([text("Hello there, world", usage=usage(20, 3))]) as srv:
        turn = model_for(srv).complete(USER, [], on_text=deltas.append)
        sent = srv.requests[0]
    assert turn.content == "Hello there, world"
    assert len(deltas) >= 3 and "".join(deltas) == turn.content
    assert turn.tool_calls == []
    assert turn.finish_reason == "stop"
    assert turn.usage is not None
    assert (turn.usage.prompt_tokens, turn.usage.completion_tokens, turn.usage.cached_tokens) == (20, 3, 0)
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}
    assert "tools" not in sent  # an empty tool list is never sent


def test_interleaved_split_tool_calls_are_assembled_in_index_order() -> None:
    raw = '{"command": "git status && git log --oneline -n 5"}'
    script = [tool_calls(call("read_file", {"path": "docs/a very long name.md"}), call("bash", raw),
                         content="Checking.")]
    with FakeOpenAIServer(script) as srv:
        turn = model_for(srv).complete(USER, TOOLS)
        sent = srv.requests[0]
    assert turn.content == "Checking."
    assert [c.name for c in turn.tool_calls] == ["read_file", "bash"]
    assert json.loads(turn.tool_calls[0].arguments) == {"path": "docs/a very long name.md"}
    assert turn.tool_calls[1].arguments == raw  # exact text, unparsed
    assert all(c.id.startswith("call_") for c in turn.tool_calls)
    assert turn.tool_calls[0].id != turn.tool_calls[1].id
    assert turn.finish_reason == "tool_calls"
    assert sent["tools"] == TOOLS


def test_server_without_usage_gives_no_usage() -> None:
    with FakeOpenAIServer([text("fine", usage=None), text("also fine", usage=None)]) as srv:
        streamed = model_for(srv).complete(USER, [])
        plain = model_for(srv, stream=False).complete(USER, [])
    assert (streamed.content, streamed.usage, streamed.finish_reason) == ("fine", None, "stop")
    assert (plain.content, plain.usage) == ("also fine", None)


def test_non_stream_mode() -> None:
    seen: list[str] = []
    script = [tool_calls(call("read_file", {"path": "x"}, id="c9"), content="text too", usage=usage(9, 2))]
    with FakeOpenAIServer(script) as srv:
        turn = model_for(srv, stream=False).complete(USER, TOOLS, on_text=seen.append)
        sent = srv.requests[0]
    assert "stream" not in sent and "stream_options" not in sent
    assert turn.content == "text too" and seen == ["text too"]
    assert [(c.id, c.name, c.arguments) for c in turn.tool_calls] == [("c9", "read_file", '{"path": "x"}')]
    assert turn.usage is not None and turn.usage.prompt_tokens == 9


def test_500_then_success_is_retried_by_the_sdk() -> None:
    with FakeOpenAIServer([error(500, "boom", retry_after=0.01), text("recovered")]) as srv:
        turn = model_for(srv, max_retries=2).complete(USER, [])
        assert turn.content == "recovered"
        assert len(srv.requests) == 2


def test_persistent_500_becomes_one_line_model_error() -> None:
    script = [error(503, "overloaded\nplease wait", retry_after=0.01) for _ in range(2)]
    with FakeOpenAIServer(script) as srv:
        with pytest.raises(ModelError) as exc:
            model_for(srv, max_retries=1).complete(USER, [])
        assert len(srv.requests) == 2
    message = str(exc.value)
    assert "\n" not in message
    assert "server error (503)" in message and "after 1 retry" in message and "overloaded" in message
    assert exc.value.status == 503


def test_401_names_the_env_var_and_never_the_key() -> None:
    with FakeOpenAIServer([error(401, f"Incorrect API key provided: {SECRET}")]) as srv:
        model = OpenAIChatModel("m", srv.base_url, SECRET, "DEEPSEEK_API_KEY", max_retries=2)
        with pytest.raises(ModelError) as exc:
            model.complete(USER, [])
        assert len(srv.requests) == 1  # 401 is not retried
        assert srv.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    message = str(exc.value)
    assert "authentication failed (401)" in message
    assert "$DEEPSEEK_API_KEY" in message
    assert srv.base_url in message
    assert SECRET not in message and SECRET not in repr(model)
    assert exc.value.status == 401


def test_missing_key_is_reported_before_any_request() -> None:
    with pytest.raises(ModelError, match=r"\$OPENAI_API_KEY"):
        OpenAIChatModel("m", "http://127.0.0.1:9/v1", None, "OPENAI_API_KEY")


@pytest.mark.parametrize(("status", "message", "expected"), [
    (404, "The model `nope` does not exist", ["not found (404)", "nope", "base_url"]),
    (400, "Invalid value for 'temperature'", ["request rejected (400)", "temperature"]),
    (400, "This model's maximum context length is 65536 tokens", ["the request has ~", "context is 65,536 (",
                                                                  "400)", "send less"]),
    (429, "Rate limit reached", ["rate limited (429)", "after 0 retries", "Rate limit reached"]),
    (403, "forbidden", ["permission denied (403)"]),
    (500, "tools param requires --jinja flag", ["takes no tools as it was started (500)", "start llama-server with --jinja"]),
])
def test_status_errors_explain_what_to_do(status: int, message: str, expected: list[str]) -> None:
    with FakeOpenAIServer([error(status, message)]) as srv, pytest.raises(ModelError) as exc:
        model_for(srv).complete(USER, [])
    assert all(part in str(exc.value) for part in expected), str(exc.value)
    assert exc.value.status == status


def test_connection_refused_is_a_clear_error_quickly() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    base_url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(ModelError) as exc:
        OpenAIChatModel("m", base_url, "k", max_retries=0).complete(USER, [])
    message = str(exc.value)
    assert message.startswith(f"cannot reach {base_url}:")
    assert "is the server running?" in message


def test_timeout_is_reported() -> None:
    with FakeOpenAIServer([text("late", delay=5)]) as srv, \
            pytest.raises(ModelError, match="timed out after 0.5 s"):
        model_for(srv, timeout=0.5).complete(USER, [])


def test_stream_cut_midway_is_a_model_error() -> None:
    deltas: list[str] = []
    with FakeOpenAIServer([text("one two three four five", drop_after=3)]) as srv, \
            pytest.raises(ModelError, match="ended before the model finished .3 events received; connection lost"):
        model_for(srv).complete(USER, [], on_text=deltas.append)
    assert deltas == ["one ", "two "]  # the text before the cut was shown


def test_length_finish_reason_passes_through() -> None:
    with FakeOpenAIServer([text("truncated answ", finish_reason="length"),
                           text("cut", finish_reason="length")]) as srv:
        assert model_for(srv).complete(USER, []).finish_reason == "length"
        assert model_for(srv, stream=False).complete(USER, []).finish_reason == "length"


@pytest.mark.parametrize("style", ["openai", "deepseek"])
def test_cached_tokens_are_counted(style: str) -> None:
    with FakeOpenAIServer([text("a", usage=usage(1000, 10, cached=768, style=style)),
                           text("b", usage=usage(1000, 10, cached=512, style=style))]) as srv:
        streamed = model_for(srv).complete(USER, [])
        plain = model_for(srv, stream=False).complete(USER, [])
    assert streamed.usage is not None and streamed.usage.cached_tokens == 768
    assert plain.usage is not None and plain.usage.cached_tokens == 512


def test_deepseek_reasoning_is_kept_apart_and_not_sent_back() -> None:
    with FakeOpenAIServer([text("42", reasoning="Let me think step by step"), text("ok")]) as srv:
        model = model_for(srv)
        turn = model.complete(USER, [])
        assert turn.content == "42" and "think" not in json.dumps(turn.to_message())
        # The fake server rejects reasoning_content in input, as DeepSeek does.
        model.complete([*USER, turn.to_message(), {"role": "user", "content": "more"}], [])
        assert "reasoning_content" not in srv.raw_requests[1].decode()


def test_options_quirks_and_unknown_options_go_to_the_body() -> None:
    options = {"top_p": 0.9, "seed": 7, "max_tokens": 100, "top_k": 40, "extra_body": {"min_p": 0.1}}
    with FakeOpenAIServer(["a"]) as srv:
        model = model_for(srv, temperature=0.2, options=options, quirks={
            "stream_usage": False, "no_parallel_tool_calls": True,
            "max_tokens_field": "max_completion_tokens", "null_content_as_empty": True})
        history = [*USER, {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "x"}]
        model.complete(history, TOOLS)
        sent = srv.requests[0]
    assert (sent["temperature"], sent["top_p"], sent["seed"]) == (0.2, 0.9, 7)
    assert sent["max_completion_tokens"] == 100 and "max_tokens" not in sent
    assert (sent["top_k"], sent["min_p"]) == (40, 0.1)
    assert "stream_options" not in sent
    assert sent["parallel_tool_calls"] is False
    assert sent["messages"][1]["content"] == ""
    assert history[1]["content"] is None  # the caller's history is not mutated


def test_unknown_quirk_and_reserved_options_are_rejected() -> None:
    from nami_yaml.errors import ConfigError

    with pytest.raises(ConfigError, match="no_such_quirk"):
        OpenAIChatModel("m", "http://127.0.0.1:9/v1", "k", quirks={"no_such_quirk": True})
    with pytest.raises(ConfigError, match="stream"):
        OpenAIChatModel("m", "http://127.0.0.1:9/v1", "k", options={"stream": False})


def test_identical_histories_give_identical_request_bytes() -> None:
    with FakeOpenAIServer(["a", "a"]) as srv:
        model = model_for(srv)
        model.complete(USER, TOOLS)
        model.complete(USER, TOOLS)
        assert srv.raw_requests[0] == srv.raw_requests[1]


def test_keyboard_interrupt_propagates_and_closes_the_stream() -> None:
    words = " ".join(f"w{i}" for i in range(200))
    with FakeOpenAIServer([text(words, chunk_delay=0.02), text("next")]) as srv:
        model = model_for(srv)

        def interrupt(delta: str) -> None:
            if delta.startswith("w3"):
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            model.complete(USER, [], on_text=interrupt)
        # The same client still works: the interrupted response did not wedge the connection pool.
        assert model.complete(USER, []).content == "next"


def test_tool_calls_without_ids_get_generated_ones() -> None:
    # A raw server that sends a call with neither id nor index, as some local servers do.
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
            {"type": "function", "function": {"name": "read_file", "arguments": '{"pa'}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"function": {"arguments": 'th": "a"}'}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]) + b"data: [DONE]\n\n"
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, rest = data.split(b"\r\n\r\n", 1)
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length")))
            while len(rest) < length:
                rest += conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n" + body)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        turn = OpenAIChatModel("m", url, "k", max_retries=0).complete(USER, TOOLS)
    finally:
        thread.join(timeout=10)
        listener.close()
    assert len(turn.tool_calls) == 1
    assert turn.tool_calls[0].name == "read_file"
    assert json.loads(turn.tool_calls[0].arguments) == {"path": "a"}
    assert turn.tool_calls[0].id.startswith("call_") and len(turn.tool_calls[0].id) > 10


def test_importing_the_package_does_not_import_openai() -> None:
    code = ("import sys, nami_yaml.model, nami_yaml.model.client, nami_yaml.testing; "
            "assert 'openai' not in sys.modules, 'openai imported'")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_the_sdks_own_options_are_not_sent_in_the_body() -> None:
    """extra_headers / extra_query go where create() would put them; the body is exactly what nami built."""
    options = {"extra_headers": {"X-Team": "ops"}, "extra_query": {"api-version": "2"}, "top_p": 0.5}
    with FakeOpenAIServer(["a"]) as srv:
        model_for(srv, options=options).complete(USER, TOOLS)
        sent = recorded = srv.requests[0]
    assert recorded.headers["x-team"] == "ops" and recorded.path.endswith("?api-version=2")
    assert not {"extra_headers", "extra_query", "headers"} & set(sent)
    assert list(sent)[:3] == ["model", "messages", "tools"] and sent["top_p"] == 0.5
