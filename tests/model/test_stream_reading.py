"""The client reads a streamed response as plain JSON: a recorded stream gives the AssistantTurn it gave when
every chunk was an SDK object, and the assembly makes the same turn of plain dicts as of SDK objects."""

from __future__ import annotations

import json

import pytest

from nami_yaml.model import AssistantTurn, OpenAIChatModel, ToolCall, Usage
from nami_yaml.model.assembly import StreamAssembly
from nami_yaml.testing import FakeOpenAIServer, ScriptedResponse, text

USER = [{"role": "user", "content": "hi"}]


def chunk(delta: dict[str, object] | None = None, finish: str | None = None, **extra: object) -> str:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
    return json.dumps({"id": "chatcmpl-rec", "object": "chat.completion.chunk", "created": 1, "model": "m",
                       "choices": choices, **extra})


# A stream as servers send it: a role chunk, reasoning (DeepSeek), text in pieces, two tool calls whose
# argument pieces interleave, a name repeated on a later piece, a piece without an index (continues the last
# call), the finish, then usage with cached and reasoning tokens.
RECORDED = [
    chunk({"role": "assistant", "content": ""}),
    chunk({"reasoning_content": "Think "}),
    chunk({"reasoning_content": "first."}),
    chunk({"content": "Reading "}),
    chunk({"content": "two files."}),
    chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                           "function": {"name": "read_file", "arguments": ""}}]}),
    chunk({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
                           "function": {"name": "grep", "arguments": '{"pat'}}]}),
    chunk({"tool_calls": [{"index": 0, "function": {"name": "read_file", "arguments": '{"path": '}}]}),
    chunk({"tool_calls": [{"index": 1, "function": {"arguments": 'tern": "x"}'}}]}),
    chunk({"tool_calls": [{"function": {"arguments": ""}}]}),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"a.txt"}'}}]}),
    chunk({}, "tool_calls"),
    chunk(None, usage={"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150,
                       "prompt_tokens_details": {"cached_tokens": 100},
                       "completion_tokens_details": {"reasoning_tokens": 12}}),
    "[DONE]",
]
EXPECTED = AssistantTurn(
    content="Reading two files.",
    tool_calls=[ToolCall("call_a", "read_file", '{"path": "a.txt"}'), ToolCall("call_b", "grep", '{"pattern": "x"}')],
    finish_reason="tool_calls",
    usage=Usage(prompt_tokens=120, completion_tokens=30, cached_tokens=100, reasoning_tokens=12, reported=True),
)
# DeepSeek reports cache hits in a field of its own, beside the usual ones.
DEEPSEEK = [chunk({"role": "assistant", "content": "ok"}), chunk({}, "stop"),
            chunk(None, usage={"prompt_tokens": 50, "completion_tokens": 1, "prompt_cache_hit_tokens": 40,
                               "prompt_cache_miss_tokens": 10}), "[DONE]"]


def model_for(server: FakeOpenAIServer) -> OpenAIChatModel:
    return OpenAIChatModel("fake-model", server.base_url, "sk-test", max_retries=0)


def test_a_recorded_stream_gives_the_turn_it_always_gave() -> None:
    shown: list[str] = []
    with FakeOpenAIServer([ScriptedResponse(raw_events=RECORDED)]) as srv:
        turn = model_for(srv).complete(USER, [], on_text=shown.append)
    assert turn == EXPECTED
    assert shown == ["Reading ", "two files."]  # reasoning is not shown as the answer


def test_deepseek_cache_hits_are_read_from_plain_json() -> None:
    with FakeOpenAIServer([ScriptedResponse(raw_events=DEEPSEEK)]) as srv:
        turn = model_for(srv).complete(USER, [])
    assert turn == AssistantTurn("ok", [], "stop", Usage(50, 1, 40, 0, True))


@pytest.mark.parametrize("events", [RECORDED, DEEPSEEK], ids=["recorded", "deepseek"])
def test_plain_chunks_and_sdk_objects_assemble_into_the_same_turn(events: list[str]) -> None:
    from openai.types.chat import ChatCompletionChunk

    plain, typed = StreamAssembly(), StreamAssembly()
    for event in events[:-1]:
        data = json.loads(event)
        assert plain.feed(data) == typed.feed(ChatCompletionChunk.construct(**data))
    assert plain.turn("here") == typed.turn("here")


def test_a_whole_response_is_read_as_plain_json_too() -> None:
    with FakeOpenAIServer([text("whole", usage={"prompt_tokens": 9, "completion_tokens": 2,
                                                "prompt_cache_hit_tokens": 4})]) as srv:
        model = OpenAIChatModel("fake-model", srv.base_url, "sk-test", max_retries=0, stream=False)
        turn = model.complete(USER, [])
    assert turn == AssistantTurn("whole", [], "stop", Usage(9, 2, 4, 0, True))
