"""Each preset's way of saying "the prompt is too long" becomes ModelError(kind="context_length") (which
makes the loop compact and retry once); other rejections do not. Real client, fake server."""

from __future__ import annotations

import re

import pytest

from nami_yaml.model.client import OpenAIChatModel
from nami_yaml.model.types import ModelError
from nami_yaml.testing import FakeOpenAIServer, error, text

TOO_LONG = {
    "openai": error(400, "This model's maximum context length is 128000 tokens. However, your messages resulted "
                         "in 130512 tokens. Please reduce the length of the messages.", code="context_length_exceeded"),
    "openai-responses-style": error(400, "Input tokens exceed the configured limit of 272000 tokens.",
                                    code="context_length_exceeded"),
    "deepseek": error(400, "This model's maximum context length is 131072 tokens. However, you requested 140000 "
                           "tokens (139000 in the messages, 1000 in the completion). Please reduce the length of "
                           "the messages or completion."),
    "vllm": error(400, "The decoder prompt (length 40000) is longer than the maximum model length of 32768. "
                       "Make sure that `max_model_len` is no smaller than the number of text tokens.",
                  type="BadRequestError"),
    "llamacpp": error(400, "the request exceeds the available context size, try increasing it",
                      type="exceed_context_size_error"),
    "proxy": error(413, "Request Entity Too Large"),
}


def complete(server: FakeOpenAIServer) -> ModelError:
    model = OpenAIChatModel("fake-model", server.base_url, api_key="sk-test", max_retries=0)
    with pytest.raises(ModelError) as caught:
        model.complete([{"role": "user", "content": "hi"}], [])
    return caught.value


@pytest.mark.parametrize("preset", sorted(TOO_LONG))
def test_too_long_is_recognised(preset: str) -> None:
    with FakeOpenAIServer([TOO_LONG[preset]]) as server:
        failure = complete(server)
    assert failure.kind == "context_length"
    assert "the request has" in str(failure) and "send less" in str(failure) and failure.status in (400, 413)


@pytest.mark.parametrize("response", [
    error(400, "Invalid schema for function 'x': 'strin' is not valid under any of the given schemas."),
    error(422, "temperature: Input should be less than or equal to 2"),
    error(429, "Rate limit reached for tokens per min", retry_after=0.01),
])
def test_other_rejections_are_not(response: object) -> None:
    with FakeOpenAIServer([response]) as server:  # type: ignore[list-item]
        failure = complete(server)
    assert failure.kind is None


# A llama.cpp server with a small context, as each build and each of the two servers refuses a longer request.
SYSTEM = "You are a helpful assistant. " * 300  # about 9,000 bytes: ~2,300 tokens as the fake counts
CONTEXT = 2048


def overflow(style: str, *, stream: bool = True, publish: bool = True, retries: int = 2) -> tuple[str, int]:
    """The error a long request gets from a fake llama.cpp server with a 2,048-token context, and how many
    chat requests it took."""
    with FakeOpenAIServer(context_size=CONTEXT, overflow=style, publish_context=publish) as server:
        model = OpenAIChatModel("local", server.base_url, stream=stream, max_retries=retries)
        model.retry_delay = 0
        with pytest.raises(ModelError) as caught:
            model.complete([{"role": "system", "content": SYSTEM}, {"role": "user", "content": "hi"}], [])
        assert caught.value.kind == "context_length"
        return str(caught.value), len(server.requests)


@pytest.mark.parametrize("stream", [True, False])
def test_llama_server_says_both_sizes_and_is_not_retried(stream: bool) -> None:
    message, asked = overflow("status", stream=stream)
    # The server's own count (no "~"), and its context.
    assert re.match(r"the request has 2,\d{3} tokens; the server's context is 2,048 \(http://127\.0\.0\.1:\d+/v1, 400\)",
                    message)
    assert "raise it (llama-server -c N" in message and "lower limits.max_output" in message
    assert asked == 1


def test_an_older_llama_server_publishes_its_context_at_props() -> None:
    message, asked = overflow("plain")  # "the request exceeds the available context size", no numbers
    assert message.startswith("the request has ~2,") and f"the server's context is {CONTEXT:,} (" in message
    assert asked == 1


def test_without_props_the_window_is_not_made_up() -> None:
    message, _ = overflow("plain", publish=False)
    assert "more than the model at http://127.0.0.1:" in message and "context is" not in message
    assert "raise it (llama-server -c N" in message


def test_an_error_line_in_a_stream_is_the_reason_not_an_empty_stream() -> None:
    # llama-server before mid-2025: 200, `error: {...}`, `data: [DONE]`; the SDK drops the error line.
    message, asked = overflow("event")
    assert f"the server's context is {CONTEXT:,}" in message and "ended before the model finished" not in message
    assert asked == 1  # said why: not retried


def test_llama_cpp_python_drops_the_stream_and_a_plain_retry_says_why() -> None:
    # llama-cpp-python's server starts the stream before it finds the prompt too long, then drops it unsaid.
    message, asked = overflow("python")
    assert re.match(r"the request has 2,\d{3} tokens", message) and f"the model's context is {CONTEXT:,}" not in message
    assert f"the server's context is {CONTEXT:,}" in message and "ended before the model finished" not in message
    assert asked == 2  # the stream, then the same request not streamed


def test_a_stream_cut_before_its_first_event_is_retried_whole() -> None:
    # Any server: a stream that says nothing is asked for again without streaming, and the answer counts.
    with FakeOpenAIServer([text("", end_after=0), text("the answer")]) as server:
        model = OpenAIChatModel("local", server.base_url, max_retries=2)
        model.retry_delay = 0
        turn = model.complete([{"role": "user", "content": "hi"}], [])
    assert turn.content == "the answer"
    assert [bool(r.get("stream")) for r in server.requests] == [True, False]


def test_other_stream_errors_are_said_once() -> None:
    events = ['{"error": {"message": "model is loading", "type": "unavailable_error", "code": 503}}']
    with FakeOpenAIServer([text("", raw_events=events)]) as server:
        model = OpenAIChatModel("local", server.base_url, max_retries=2)
        with pytest.raises(ModelError, match="while streaming: model is loading") as caught:
            model.complete([{"role": "user", "content": "hi"}], [])
    assert caught.value.kind is None and len(server.requests) == 1
