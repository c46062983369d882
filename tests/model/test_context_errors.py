"""Each preset's way of saying "the prompt is too long" becomes ModelError(kind="context_length") (which
makes the loop compact and retry once); other rejections do not. Real client, fake server."""

from __future__ import annotations

import pytest

from nami_yaml.model.client import OpenAIChatModel
from nami_yaml.model.types import ModelError
from nami_yaml.testing import FakeOpenAIServer, error

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
    assert "too long for the model's context window" in str(failure) and failure.status in (400, 413)


@pytest.mark.parametrize("response", [
    error(400, "Invalid schema for function 'x': 'strin' is not valid under any of the given schemas."),
    error(422, "temperature: Input should be less than or equal to 2"),
    error(429, "Rate limit reached for tokens per min", retry_after=0.01),
])
def test_other_rejections_are_not(response: object) -> None:
    with FakeOpenAIServer([response]) as server:  # type: ignore[list-item]
        failure = complete(server)
    assert failure.kind is None
