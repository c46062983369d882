"""ScriptedModel: the in-memory Model for tests, as strict about the protocol as the fake server."""

from __future__ import annotations

import pytest

from nami_yaml.model.types import ModelError, Usage
from nami_yaml.testing import ScriptedModel, ScriptedResponse, call, error, text, tool_calls, usage

USER = [{"role": "user", "content": "hi"}]


def test_text_streams_in_pieces_and_usage_is_estimated() -> None:
    pieces: list[str] = []
    turn = ScriptedModel(["one two three"]).complete(USER, [], on_text=pieces.append)
    assert len(pieces) == 3 and "".join(pieces) == "one two three"
    assert turn.content == "one two three" and turn.finish_reason == "stop"
    assert turn.usage is not None and turn.usage.prompt_tokens > 0 and turn.usage.completion_tokens > 0


def test_tool_calls_keep_their_raw_arguments_and_get_ids() -> None:
    model = ScriptedModel([tool_calls(call("a", '{"x": 1'), call("b", {"y": 2}, id="mine"))])
    turn = model.complete(USER, [])
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [("a", '{"x": 1'), ("b", '{"y": 2}')]
    assert turn.tool_calls[1].id == "mine" and turn.tool_calls[0].id and turn.finish_reason == "tool_calls"


def test_explicit_usage_errors_and_the_end_of_the_script() -> None:
    model = ScriptedModel([text("a", usage=usage(100, 5, cached=60)), text("b", usage=None), error(500, "boom")])
    assert model.complete(USER, []).usage == Usage(100, 5, 60)
    assert model.complete(USER, []).usage is None
    with pytest.raises(ModelError, match=r"scripted error \(500\): boom"):
        model.complete(USER, [])
    with pytest.raises(ModelError, match="no more responses"):
        model.complete(USER, [])
    assert len(model.requests) == 4


def test_an_unanswered_tool_call_is_refused_like_a_real_server() -> None:
    history = [*USER, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "a", "arguments": "{}"}}]}]
    with pytest.raises(ModelError, match="c1"):
        ScriptedModel(["never"]).complete(history, [])


def test_requests_are_copies() -> None:
    messages = [dict(m) for m in USER]
    model = ScriptedModel(["ok"])
    model.complete(messages, [])
    messages[0]["content"] = "changed"
    assert model.requests[0]["messages"][0]["content"] == "hi"


@pytest.mark.parametrize("broken", [text("a b", end_after=1), text("a b", malformed="json"), text("a b", drop_after=0)])
def test_a_broken_response_is_a_model_error_as_the_client_reports_it(broken: ScriptedResponse) -> None:
    with pytest.raises(ModelError, match="broken response .cut short or malformed."):
        ScriptedModel([broken]).complete(USER, [])
