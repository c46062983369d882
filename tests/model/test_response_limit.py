"""limits.max_response_bytes: a response that grows without end is cut off at the limit with one error,
streamed or not, and not retried. Real HTTP from the fake server, the real openai SDK."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from nami_yaml.model import ModelError, OpenAIChatModel
from nami_yaml.testing import FakeOpenAIServer, ScriptedResponse, call, text, tool_calls

USER = [{"role": "user", "content": "hi"}]
LIMIT = 200_000
PIECE = "x" * 10_000


class Endless:
    """A stream of 50 MB in events of 10 KB, as good as endless next to the limit (and a test without the
    limit fails instead of hanging); counts the events the server was asked for before the client left."""

    EVENTS = 5_000

    def __init__(self, event: dict) -> None:
        self.payload = _chunk(event, None)
        self.events = 0

    def __iter__(self) -> Iterator[bytes]:
        for _ in range(self.EVENTS):
            self.events += 1
            yield self.payload
        yield _chunk({}, "stop")
        yield b"[DONE]"


def _chunk(delta: dict, finish: str | None) -> bytes:
    return json.dumps({"id": "c1", "object": "chat.completion.chunk", "model": "m",
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).encode()


def model_for(server: FakeOpenAIServer, **kwargs: object) -> OpenAIChatModel:
    return OpenAIChatModel("fake-model", server.base_url, "sk-test", max_retries=2,
                           max_response_bytes=LIMIT, **kwargs)  # type: ignore[arg-type]


def _expect_cut(server: FakeOpenAIServer, stream: bool = True) -> str:
    shown: list[str] = []
    with pytest.raises(ModelError) as failure:
        model_for(server, stream=stream).complete(USER, [], on_text=shown.append)
    assert failure.value.kind == "response_too_large"
    message = str(failure.value)
    assert "limits.max_response_bytes" in message and f"{LIMIT:,} bytes" in message and "\n" not in message
    assert len(server.requests) == 1  # not retried, although two retries were allowed
    assert sum(map(len, shown)) <= LIMIT  # what was shown before the cut is within the limit too
    return message


@pytest.mark.parametrize("delta", [
    {"content": PIECE},
    {"reasoning_content": PIECE},
    {"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "f", "arguments": PIECE}}]},
], ids=["text", "reasoning", "tool-arguments"])
def test_an_endless_stream_is_cut_at_the_limit(delta: dict) -> None:
    endless = Endless(delta)
    with FakeOpenAIServer([ScriptedResponse(raw_events=endless)]) as server:
        _expect_cut(server)
    # nami ended the stream: the server stopped when the client hung up, after the limit and what the
    # sockets buffer (a few MB), not the 50 MB it had to send.
    assert LIMIT // len(PIECE) <= endless.events < Endless.EVENTS


def test_many_tool_calls_count_together() -> None:
    calls = [call("f", {"text": "y" * 900}) for _ in range(300)]  # 300 calls of ~1 KB: ~300 KB in all
    with FakeOpenAIServer([tool_calls(*calls)]) as server:
        _expect_cut(server)


def test_a_huge_body_that_is_not_streamed_is_cut() -> None:
    with FakeOpenAIServer([text("z" * (4 * LIMIT))]) as server:
        _expect_cut(server, stream=False)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
def test_a_response_within_the_limit_is_whole(stream: bool) -> None:
    answer = "w" * (LIMIT // 2)
    with FakeOpenAIServer([text(answer), tool_calls(call("f", {"text": answer[:-100]}))]) as server:
        model = model_for(server, stream=stream)
        assert model.complete(USER, []).content == answer
        [made] = model.complete(USER, []).tool_calls
    assert json.loads(made.arguments) == {"text": answer[:-100]}


def test_multibyte_text_is_counted_in_utf8_bytes() -> None:
    # 80,000 characters of three bytes each: 240,000 bytes, past a 200,000-byte limit.
    with FakeOpenAIServer([text("語" * 80_000)]) as server:
        _expect_cut(server)


def _completion_body(answer: str) -> bytes:
    return json.dumps({"id": "c1", "object": "chat.completion", "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}]}).encode()


@pytest.mark.parametrize("encoded", [True, False], ids=["gzip", "plain"])
def test_a_body_is_read_whole_only_when_its_declared_length_is_within_the_limit(encoded: bool) -> None:
    """A body declaring a Content-Length within the limit is read in one piece (HTTP holds the server to that
    length); a compressed one may unpack to any size, so it is still read in pieces and cut at the limit."""
    import gzip

    from tests.local_http import QuietHandler, serving

    body = _completion_body("z" * (4 * LIMIT) if encoded else "small")

    class Handler(QuietHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers["Content-Length"]))
            packed = gzip.compress(body) if encoded else body
            self.reply(200, packed, {"Content-Type": "application/json",
                                     **({"Content-Encoding": "gzip"} if encoded else {})})

    with serving(Handler) as url:
        model = OpenAIChatModel("m", f"{url}/v1", "k", max_retries=0, stream=False, max_response_bytes=LIMIT)
        if encoded:
            assert len(gzip.compress(body)) < LIMIT  # what it declares is within the limit
            with pytest.raises(ModelError, match="limits.max_response_bytes"):
                model.complete(USER, [])
        else:
            assert model.complete(USER, []).content == "small"


@pytest.mark.parametrize("call_of", [
    lambda i: {"index": i, "id": f"call_{i}_" + "i" * 10_000},  # ids: kept, and sent back every request
    lambda i: {"index": i},  # empty calls: each would still be a tool message
], ids=["long-ids", "empty-calls"])
def test_tool_calls_count_with_their_ids_and_each_call(call_of: Any) -> None:
    asked = [0]

    def events() -> Iterator[bytes]:
        for i in range(50_000):  # 50,000 calls: past the limit either way
            asked[0] += 1
            yield _chunk({"tool_calls": [call_of(i)]}, None)
        yield _chunk({}, "tool_calls")
        yield b"[DONE]"

    with FakeOpenAIServer([ScriptedResponse(raw_events=events())]) as server:
        _expect_cut(server)
    assert asked[0] < 50_000  # nami hung up
