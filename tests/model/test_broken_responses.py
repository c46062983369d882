"""Servers that break off or send garbage after a 200, as llama.cpp and proxies do: each is a one-line
ModelError naming the endpoint, retried like a 5xx, never a traceback. Real HTTP, the real openai SDK."""

from __future__ import annotations

import json

import pytest

from nami_yaml.model import ModelError, OpenAIChatModel
from nami_yaml.testing import FakeOpenAIServer, ScriptedResponse, call, text, tool_calls

USER = [{"role": "user", "content": "hi"}]
TOOLS = [{"type": "function", "function": {"name": "write_file", "description": "write",
                                           "parameters": {"type": "object", "properties": {}}}}]
ANSWER = "one two three four five"


def model_for(server: FakeOpenAIServer, retries: int = 0, **kwargs: object) -> OpenAIChatModel:
    model = OpenAIChatModel("fake-model", server.base_url, "sk-test", max_retries=retries, **kwargs)  # type: ignore[arg-type]
    model.retry_delay = 0.01
    return model


WRITE = call("write_file", {"path": "notes/a.txt", "content": "some text to write"})


@pytest.mark.parametrize(("response", "events", "shown"), [
    (text(ANSWER, end_after=0, send_done=False), 0, ""),  # llama.cpp answering what it cannot do
    (text(ANSWER, end_after=0), 0, ""),  # only [DONE]
    (text(ANSWER, end_after=3), 3, "one two "),  # cut after some text, [DONE] sent
    (text(ANSWER, end_after=3, send_done=False), 3, "one two "),
    (tool_calls(WRITE, end_after=3), 3, ""),  # role, the call's name, one piece of its arguments
    (tool_calls(WRITE, drop_after=3), 3, ""),  # the same, the connection cut
], ids=["empty", "only-done", "cut-after-text", "cut-without-done", "cut-in-arguments", "dropped-in-arguments"])
def test_a_stream_that_ends_before_a_finish_reason_is_an_error(response: ScriptedResponse, events: int,
                                                              shown: str) -> None:
    deltas: list[str] = []
    with FakeOpenAIServer([response]) as srv:
        with pytest.raises(ModelError) as failure:
            model_for(srv).complete(USER, TOOLS, on_text=deltas.append)
        assert len(srv.requests) == 1
    message = str(failure.value)
    plural = "event" if events == 1 else "events"
    assert message.startswith(f"the stream from {srv.base_url} ended before the model finished "
                              f"({events} {plural} received")
    assert "\n" not in message
    assert "".join(deltas) == shown


def test_the_cut_stream_sent_part_of_the_arguments() -> None:
    """The cut really is inside the call's arguments: a client keeping what it had would run a broken call."""
    with FakeOpenAIServer([tool_calls(WRITE, end_after=3)]) as srv:
        import openai

        sdk = openai.OpenAI(base_url=srv.base_url, api_key="k", max_retries=0)
        chunks = list(sdk.chat.completions.create(model="m", messages=USER, stream=True))
    fragment = chunks[-1].choices[0].delta.tool_calls[0].function.arguments
    assert fragment and not fragment.endswith("}")
    assert all(c.choices[0].finish_reason is None for c in chunks)


def test_a_cut_stream_is_retried_and_the_repeated_text_is_not_shown_twice() -> None:
    deltas: list[str] = []
    with FakeOpenAIServer([text(ANSWER, end_after=3), text(ANSWER)]) as srv:
        turn = model_for(srv, retries=2).complete(USER, [], on_text=deltas.append)
        assert len(srv.requests) == 2
        assert srv.raw_requests[0] == srv.raw_requests[1]
    assert turn.content == ANSWER and turn.finish_reason == "stop"
    assert "".join(deltas) == ANSWER


def test_a_different_answer_after_a_retry_starts_on_a_new_line() -> None:
    deltas: list[str] = []
    with FakeOpenAIServer([text("alpha beta gamma", end_after=3), text("other answer")]) as srv:
        turn = model_for(srv, retries=1).complete(USER, [], on_text=deltas.append)
    assert turn.content == "other answer"
    assert "".join(deltas) == "alpha beta \nother answer"


def test_a_tool_call_cut_in_its_arguments_is_retried_whole() -> None:
    with FakeOpenAIServer([tool_calls(WRITE, end_after=3), tool_calls(WRITE)]) as srv:
        turn = model_for(srv, retries=1).complete(USER, TOOLS)
    assert [c.name for c in turn.tool_calls] == ["write_file"]
    assert json.loads(turn.tool_calls[0].arguments) == {"path": "notes/a.txt", "content": "some text to write"}


def test_retries_run_out_with_the_count_in_the_message() -> None:
    # (A stream that says nothing at all is asked for again whole: test_context_errors.py.)
    with FakeOpenAIServer([text(ANSWER, end_after=1, send_done=False) for _ in range(3)]) as srv:
        with pytest.raises(ModelError, match=r"\(1 event received\); 2 retries did not help$"):
            model_for(srv, retries=2).complete(USER, [])
        assert len(srv.requests) == 3


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
@pytest.mark.parametrize(("kind", "expected"), [
    ("utf8", "is not valid UTF-8"),
    ("json", "is not JSON"),
    ("types", "content is a number (42), expected text"),
])
def test_malformed_responses_are_one_line_model_errors(kind: str, expected: str, stream: bool) -> None:
    with FakeOpenAIServer([text("hello there", malformed=kind)]) as srv, pytest.raises(ModelError) as failure:
        model_for(srv, stream=stream).complete(USER, [], on_text=lambda piece: None)
    message = str(failure.value)
    assert message.startswith(f"malformed {'stream' if stream else 'response'} from {srv.base_url}: ")
    assert expected in message and "\n" not in message
    if stream:
        assert "event 2" in message  # the first event was fine


@pytest.mark.parametrize(("event", "expected"), [
    ('{"choices": "oops"}', "event 1: choices is text, expected a list"),
    ('{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"name": "f", '
     '"arguments": {"a": 1}}}]}}]}', "choices[0].delta.tool_calls[0].function.arguments is an object, expected text"),
    ('{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": [0]}]}}]}',
     "choices[0].delta.tool_calls[0].index is a list, expected a whole number"),
    ('{"choices": [{"index": 0, "delta": {}, "finish_reason": 7}]}', "finish_reason is a number (7), expected text"),
    ('{"choices": [], "usage": {"prompt_tokens": "12"}}', "usage.prompt_tokens is text, expected a whole number"),
    ("42", "event 1 is a number (42), expected an object"),
    ("null", "event 1 is null, expected an object"),
])
def test_fields_of_the_wrong_type_are_named(event: str, expected: str) -> None:
    with FakeOpenAIServer([ScriptedResponse(raw_events=[event, "[DONE]"])]) as srv, \
            pytest.raises(ModelError) as failure:
        model_for(srv).complete(USER, [])
    assert expected in str(failure.value)


def test_a_malformed_response_is_retried() -> None:
    with FakeOpenAIServer([text("x", malformed="json"), text("fine")]) as srv:
        assert model_for(srv, retries=1).complete(USER, []).content == "fine"
        assert len(srv.requests) == 2


HISTORY = [*USER, {"role": "assistant", "content": None, "tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": "write_file", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "written"}]


def test_null_content_is_sent_as_empty_text_by_default_and_stays_byte_stable() -> None:
    with FakeOpenAIServer(["done", "done"], refuse_null_content=True) as srv:
        model = model_for(srv)
        assert model.complete(HISTORY, TOOLS).content == "done"
        assert model.complete(HISTORY, TOOLS).content == "done"
        assert srv.requests[0]["messages"][1]["content"] == ""
        assert srv.raw_requests[0] == srv.raw_requests[1]
    assert HISTORY[1]["content"] is None  # the caller's history is not changed


def test_what_is_sent_follows_appends_replacements_and_other_lists() -> None:
    """The messages sent for the start of the conversation are kept between requests; a list that no
    longer starts with the very same messages (compaction replaces them in place) is sent afresh."""
    def expected(messages: list[dict[str, object]]) -> list[dict[str, object]]:
        return [{**m, "content": ""} if m["role"] == "assistant" and m.get("content") is None else m
                for m in messages]

    history = [dict(m) for m in HISTORY]
    other = [{"role": "user", "content": "summarise"}]
    with FakeOpenAIServer(["done"] * 5, refuse_null_content=True) as srv:
        model = model_for(srv)
        model.complete(history, TOOLS)
        history += [{"role": "assistant", "content": None, "tool_calls": [
            {"id": "c2", "type": "function", "function": {"name": "write_file", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c2", "content": "again"}]
        model.complete(history, TOOLS)
        model.complete(other, [])  # a summary request in between
        history[1:3] = [{"role": "user", "content": "[summary]"}, {"role": "assistant", "content": "noted"}]  # in place
        model.complete(history, TOOLS)
        history.append({"role": "user", "content": "more"})
        model.complete(history, TOOLS)
        sent = [r["messages"] for r in srv.requests]
    assert sent[2] == other and sent[1][:len(sent[0])] == sent[0]
    assert sent[4] == expected(history) and sent[3] == expected(history[:-1])
    assert all(m.get("content") is not None for request in sent for m in request)
    assert history[3]["content"] is None  # the caller's history is not changed


def test_the_quirk_keeps_null_and_the_strict_server_refuses_it_in_one_line() -> None:
    with FakeOpenAIServer(["never"], refuse_null_content=True) as srv:
        model = model_for(srv, quirks={"null_content_as_empty": False})
        with pytest.raises(ModelError) as failure:
            model.complete(HISTORY, TOOLS)
        assert srv.requests[0]["messages"][1]["content"] is None
    message = str(failure.value)
    assert message.startswith(f"server error (500) at {srv.base_url}")
    assert "Input should be a valid string (field messages[1].content; 6 more problems)" in message
    assert "literal_error" not in message and len(message) < 300
