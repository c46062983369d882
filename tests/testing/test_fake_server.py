"""The fake server, driven by the real openai SDK over real HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import openai
import pytest

from nami_yaml.testing import (
    FakeOpenAIServer,
    call,
    error,
    response_from_dict,
    text,
    tool_calls,
    usage,
)
from nami_yaml.testing.pytest_plugin import fake_openai  # noqa: F401 - the fixture under test

USER = [{"role": "user", "content": "hi"}]


def client(server: FakeOpenAIServer, **kwargs: object) -> openai.OpenAI:
    kwargs.setdefault("max_retries", 0)
    return openai.OpenAI(base_url=server.base_url, api_key="sk-test", **kwargs)  # type: ignore[arg-type]


def stream(server: FakeOpenAIServer, include_usage: bool = True, **kwargs: object) -> list:
    options = {"stream_options": {"include_usage": True}} if include_usage else {}
    return list(client(server).chat.completions.create(model="m", messages=USER, stream=True,
                                                        **options, **kwargs))  # type: ignore[call-overload]


def test_base_url_is_local_ephemeral_and_ends_in_v1() -> None:
    with FakeOpenAIServer() as a, FakeOpenAIServer() as b:
        assert a.base_url.startswith("http://127.0.0.1:")
        assert a.base_url.endswith("/v1")
        assert a.port != b.port and a.port > 0


def test_streamed_text_arrives_in_several_deltas_with_usage_chunk_last() -> None:
    with FakeOpenAIServer([text("The quick brown fox", usage=usage(12, 4, cached=8))]) as srv:
        chunks = stream(srv)
    deltas = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(deltas) >= 3
    assert "".join(deltas) == "The quick brown fox"
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (12, 4)
    assert chunks[-1].usage.prompt_tokens_details.cached_tokens == 8


def test_no_usage_chunk_unless_requested() -> None:
    with FakeOpenAIServer(["one two"]) as srv:
        chunks = stream(srv, include_usage=False)
    assert all(c.usage is None for c in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_usage_none_means_the_server_sends_no_usage_at_all() -> None:
    with FakeOpenAIServer([text("a b", usage=None), text("c", usage=None)]) as srv:
        chunks = stream(srv)
        plain = client(srv).chat.completions.create(model="m", messages=USER)
    assert all(c.usage is None for c in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert plain.usage is None
    assert plain.choices[0].message.content == "c"


def test_streamed_tool_calls_are_split_and_interleaved_like_real_servers() -> None:
    raw_args = '{"command": "ls -la /tmp && echo done"}'
    script = [tool_calls(call("read_file", {"path": "some/long/file/name.txt"}, id="call_A"),
                         call("bash", raw_args), content="Let me look.")]
    with FakeOpenAIServer(script) as srv:
        chunks = stream(srv)
    text_deltas = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert "".join(text_deltas) == "Let me look."
    call_deltas = [d for c in chunks if c.choices for d in c.choices[0].delta.tool_calls or []]
    firsts = [d for d in call_deltas if d.id]
    assert [(d.index, d.id, d.type, d.function.name, d.function.arguments) for d in firsts][0] == \
        (0, "call_A", "function", "read_file", "")
    assert firsts[1].index == 1 and firsts[1].function.name == "bash" and firsts[1].id
    rest = [d for d in call_deltas if not d.id]
    assert all(d.function.name is None and d.type is None for d in rest)
    assert len([d for d in rest if d.index == 1]) >= 3  # arguments split in several pieces
    indices = [d.index for d in rest]
    assert indices != sorted(indices)  # the two calls interleave
    args = {i: "".join(d.function.arguments for d in call_deltas if d.index == i) for i in (0, 1)}
    assert json.loads(args[0]) == {"path": "some/long/file/name.txt"}
    assert args[1] == raw_args
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"


def test_raw_malformed_arguments_are_sent_verbatim() -> None:
    with FakeOpenAIServer([tool_calls(call("bash", '{"command": "ls'))]) as srv:
        reply = client(srv).chat.completions.create(model="m", messages=USER)
    assert reply.choices[0].message.tool_calls[0].function.arguments == '{"command": "ls'


def test_non_stream_completion_with_content_and_calls() -> None:
    script = [tool_calls(call("a", {"x": 1}), call("b", {}), content="both", usage=usage(7, 3))]
    with FakeOpenAIServer(script) as srv:
        reply = client(srv).chat.completions.create(model="my-model", messages=USER)
    assert reply.object == "chat.completion"
    assert reply.model == "my-model"
    message = reply.choices[0].message
    assert message.content == "both"
    assert [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls] == \
        [("a", {"x": 1}), ("b", {})]
    assert len({c.id for c in message.tool_calls}) == 2
    assert reply.choices[0].finish_reason == "tool_calls"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.total_tokens) == (7, 3, 10)


def test_finish_reason_length_and_reasoning_content() -> None:
    script = [text("cut", finish_reason="length", reasoning="thinking hard"),
              text("cut", finish_reason="length", reasoning="think")]
    with FakeOpenAIServer(script) as srv:
        chunks = stream(srv)
        plain = client(srv).chat.completions.create(model="m", messages=USER)
    reasoning = "".join(getattr(c.choices[0].delta, "reasoning_content", None) or "" for c in chunks if c.choices)
    assert reasoning == "thinking hard"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    assert plain.choices[0].finish_reason == "length"
    assert plain.choices[0].message.model_extra["reasoning_content"] == "think"


def test_deepseek_style_usage() -> None:
    with FakeOpenAIServer([text("x", usage=usage(100, 5, cached=64, style="deepseek"))]) as srv:
        chunks = stream(srv)
    extra = chunks[-1].usage.model_extra
    assert (extra["prompt_cache_hit_tokens"], extra["prompt_cache_miss_tokens"]) == (64, 36)


def test_error_responses_carry_openai_error_bodies() -> None:
    with FakeOpenAIServer([error(401, "Invalid API key"), error(400, "context too long", code="ctx")]) as srv:
        with pytest.raises(openai.AuthenticationError) as auth:
            client(srv).chat.completions.create(model="m", messages=USER)
        with pytest.raises(openai.BadRequestError) as bad:
            client(srv).chat.completions.create(model="m", messages=USER)
    assert auth.value.status_code == 401
    assert auth.value.body["message"] == "Invalid API key"
    assert bad.value.body == {"message": "context too long", "type": "invalid_request_error",
                              "param": None, "code": "ctx"}


def test_sdk_retries_a_500_then_succeeds_fast_with_retry_after() -> None:
    with FakeOpenAIServer([error(500, "boom", retry_after=0.01), "recovered"]) as srv:
        reply = client(srv, max_retries=2).chat.completions.create(model="m", messages=USER)
        assert reply.choices[0].message.content == "recovered"
        assert len(srv.requests) == 2
        assert srv.remaining == 0


def test_exhausted_script_fails_loudly_without_sdk_retries() -> None:
    with FakeOpenAIServer(["only one"]) as srv:
        sdk = client(srv, max_retries=2)
        sdk.chat.completions.create(model="m", messages=USER)
        with pytest.raises(openai.InternalServerError) as exc:
            sdk.chat.completions.create(model="m", messages=USER)
        assert "script exhausted" in str(exc.value)
        assert "request #2" in str(exc.value)
        assert len(srv.requests) == 2  # not retried


def test_responder_answers_once_the_script_is_exhausted() -> None:
    seen: list[int] = []

    def responder(body: dict) -> str:
        seen.append(len(body["messages"]))
        return f"echo {body['messages'][-1]['content']}"

    with FakeOpenAIServer(["scripted"], responder=responder) as srv:
        sdk = client(srv)
        first = sdk.chat.completions.create(model="m", messages=USER)
        second = sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "again"}])
    assert first.choices[0].message.content == "scripted"
    assert second.choices[0].message.content == "echo again"
    assert seen == [1]


def test_requests_are_recorded_with_headers_and_exact_bytes() -> None:
    tools = [{"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}]
    with FakeOpenAIServer(["a", "b"]) as srv:
        sdk = client(srv)
        sdk.chat.completions.create(model="m", messages=USER, tools=tools, temperature=0.5)
        sdk.chat.completions.create(model="m", messages=USER, tools=tools, temperature=0.5)
    first = srv.requests[0]
    assert first["messages"] == USER
    assert first["tools"] == tools
    assert first["temperature"] == 0.5
    assert first.headers["authorization"] == "Bearer sk-test"
    assert first.path == "/v1/chat/completions"
    assert json.loads(srv.raw_requests[0]) == dict(first)
    assert srv.raw_requests[0] == srv.raw_requests[1]  # identical requests, identical bytes


def test_arrival_and_send_times_are_recorded_in_order() -> None:
    with FakeOpenAIServer([text("one two three"), "plain"]) as srv:
        before = time.monotonic()
        stream(srv)
        between = time.monotonic()
        client(srv).chat.completions.create(model="m", messages=USER)
        after = time.monotonic()
    streamed, plain = srv.requests
    assert before <= streamed.arrived <= streamed.chunk_times[0] <= between <= plain.arrived <= after
    assert streamed.chunk_times == sorted(streamed.chunk_times) and len(streamed.chunk_times) >= 4
    assert plain.chunk_times == []  # not streamed


def test_delay_lets_the_client_time_out() -> None:
    with FakeOpenAIServer([text("late", delay=5)]) as srv, pytest.raises(openai.APITimeoutError):
        client(srv, timeout=0.5).chat.completions.create(model="m", messages=USER)


def test_chunk_delay_spaces_the_chunks() -> None:
    # Spaced past the client's read timeout, the stream breaks after its first pieces: they arrive one by one.
    with FakeOpenAIServer([text("a b c d", chunk_delay=3)]) as srv:
        received: list[str] = []
        with pytest.raises(openai.APITimeoutError):
            for chunk in client(srv, timeout=0.5).chat.completions.create(model="m", messages=USER, stream=True):
                received.extend(choice.delta.content or "" for choice in chunk.choices)
        assert "".join(received) != "a b c d"


def test_dropped_stream_is_a_connection_error_for_the_client() -> None:
    with FakeOpenAIServer([text("one two three four", drop_after=2)]) as srv, \
            pytest.raises(openai.APIConnectionError):
        stream(srv)


@pytest.mark.parametrize(("messages", "tools", "fragment"), [
    ([{"role": "user", "content": "x"},
      {"role": "assistant", "content": None,
       "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}]},
      {"role": "user", "content": "y"}], None, "c1"),
    ([{"role": "tool", "tool_call_id": "nope", "content": "x"}], None, "nope"),
    ([{"role": "assistant", "content": "a", "reasoning_content": "r"}], None, "reasoning_content"),
    (USER, [], "empty array"),
    ([], None, "non-empty"),
])
def test_strict_mode_rejects_what_real_servers_reject(messages: list, tools: list | None, fragment: str) -> None:
    extra = {} if tools is None else {"tools": tools}
    with FakeOpenAIServer(["unused"]) as srv:
        with pytest.raises(openai.BadRequestError) as exc:
            client(srv).chat.completions.create(model="m", messages=messages, **extra)
        assert fragment in str(exc.value)
        assert srv.remaining == 1  # a rejected request does not consume the script


def test_strict_mode_accepts_a_complete_tool_exchange() -> None:
    messages = [
        {"role": "system", "content": "s"}, {"role": "user", "content": "u"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}},
            {"id": "c2", "type": "function", "function": {"name": "t", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c2", "content": "r2"},
        {"role": "tool", "tool_call_id": "c1", "content": "r1"},
    ]
    with FakeOpenAIServer(["fine"]) as srv:
        reply = client(srv).chat.completions.create(model="m", messages=messages)
    assert reply.choices[0].message.content == "fine"


def test_models_listing_and_unknown_routes() -> None:
    with FakeOpenAIServer(models=["a", "b"]) as srv:
        assert [m.id for m in client(srv).models.list()] == ["a", "b"]
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(srv.base_url + "/nope", timeout=10)
        assert missing.value.code == 404
        bad = urllib.request.Request(srv.base_url + "/chat/completions", data=b"{not json", method="POST")
        with pytest.raises(urllib.error.HTTPError) as invalid:
            urllib.request.urlopen(bad, timeout=10)
        assert invalid.value.code == 400
        assert "not valid JSON" in json.loads(invalid.value.read())["error"]["message"]
        assert srv.requests == []  # GETs and unparseable bodies are not chat requests


def test_response_from_dict_covers_the_json_script_format() -> None:
    assert response_from_dict("hi").content == "hi"
    calls = response_from_dict({"tool_calls": [{"name": "f", "arguments": {"a": 1}}], "finish_reason": "x"})
    assert (calls.calls[0].name, json.loads(calls.calls[0].arguments), calls.finish_reason) == ("f", {"a": 1}, "x")
    err = response_from_dict({"error": {"status": 429, "message": "slow down"}})
    assert err.status == 429 and err.error_body["error"]["type"] == "rate_limit_error"


def test_fixture_gives_a_running_server(fake_openai: FakeOpenAIServer) -> None:  # noqa: F811
    fake_openai.add(text("from the fixture"))
    reply = client(fake_openai).chat.completions.create(model="m", messages=USER)
    assert reply.choices[0].message.content == "from the fixture"


def _run_cli(*args: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "nami_yaml.testing", "--port", "0", *args],
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def _stop(proc: subprocess.Popen[str]) -> int:
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=20)


def test_cli_serves_a_script_file(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": [{"name": "read_file", "arguments": {"path": "a"}}]}, "done"]))
    proc, base_url = _run_cli("--script", str(script))
    try:
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        sdk = openai.OpenAI(base_url=base_url, api_key="x", max_retries=0)
        first = sdk.chat.completions.create(model="m", messages=USER)
        assert first.choices[0].message.tool_calls[0].function.name == "read_file"
        assert sdk.chat.completions.create(model="m", messages=USER).choices[0].message.content == "done"
    finally:
        assert _stop(proc) == 0


def test_cli_demo_mode_echoes() -> None:
    proc, base_url = _run_cli()
    try:
        sdk = openai.OpenAI(base_url=base_url, api_key="x", max_retries=0)
        reply = sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "ping"}])
        assert reply.choices[0].message.content.endswith("You said: ping")
    finally:
        assert _stop(proc) == 0
