"""The line kept from a server's error body: the first message that explains something, capped, with the
request field the server refused."""

from __future__ import annotations

import pytest

from nami_yaml.model import ModelError, OpenAIChatModel
from nami_yaml.model.error_body import MAX_DETAIL, server_detail
from nami_yaml.testing import FakeOpenAIServer, ScriptedResponse

PYDANTIC_TEXT = """3 validation errors for ChatCompletionRequest
messages.1.ChatCompletionRequestAssistantMessage.role
  Input should be 'user' [type=literal_error, input_value='assistant', input_type=str]
messages.1.ChatCompletionRequestAssistantMessage.content
  Input should be a valid string [type=string_type, input_value=None, input_type=NoneType]
    For further information visit https://errors.pydantic.dev/2.5/v/string_type
tools
  Field required [type=missing, input_value={}, input_type=dict]"""


@pytest.mark.parametrize(("body", "expected"), [
    ({"message": "Invalid type for 'messages[1].content': expected a string, but got null instead.",
      "type": "invalid_request_error", "param": "messages.[1].content"},
     "Invalid type for 'messages[1].content': expected a string, but got null instead. (field messages[1].content)"),
    ({"detail": [{"type": "missing", "loc": ["body", "model"], "msg": "Field required", "input": {}},
                 {"type": "string_type", "loc": ["body", "messages", 0, "content"], "msg": "Input should be a valid string"}]},
     "Input should be a valid string (field messages[0].content; 1 more problem)"),
    ({"message": PYDANTIC_TEXT}, "Input should be a valid string (field messages[1].content; 2 more problems)"),
    ({"message": "Failed to parse tools: type must be string, but is null; tools = [\n  {\"type\": \"function\"}\n]"},
     "Failed to parse tools: type must be string, but is null; tools = ["),
    ("<html><body><h1>502 Bad Gateway</h1></body></html>", "502 Bad Gateway"),
    ({"detail": "Not authenticated"}, "Not authenticated"),
    ({}, "Internal Server Error"),
    (None, "Internal Server Error"),
])
def test_the_first_meaningful_message_and_the_field(body: object, expected: str) -> None:
    assert server_detail(body, "Internal Server Error") == expected


def test_a_long_message_is_capped() -> None:
    detail = server_detail({"message": "x" * 5000}, "")
    assert len(detail) == MAX_DETAIL and detail.endswith("…")


def test_a_fastapi_422_names_the_field_through_the_client() -> None:
    body = {"detail": [{"type": "literal_error", "loc": ["body", "messages", 1, "role"], "msg": "Input should be 'user'"},
                       {"type": "string_type", "loc": ["body", "messages", 1, "content"],
                        "msg": "Input should be a valid string", "input": None}]}
    with FakeOpenAIServer([ScriptedResponse(status=422, error_body=body)]) as srv, \
            pytest.raises(ModelError) as failure:
        OpenAIChatModel("m", srv.base_url, "k", max_retries=0).complete([{"role": "user", "content": "hi"}], [])
    assert str(failure.value) == (f"request rejected (422) by {srv.base_url}: Input should be a valid string "
                                  "(field messages[1].content; 1 more problem)")
