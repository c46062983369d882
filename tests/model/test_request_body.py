"""The request body encoded with each message once: the same bytes as the SDK's own encoding, every time."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest

from nami_yaml.model import ModelError, OpenAIChatModel
from nami_yaml.model.request_body import BodyEncoder, GrowingList
from nami_yaml.testing import FakeOpenAIServer, text

TOOLS = [{"type": "function", "function": {"name": "read_file", "description": "Liest eine Datei — „genau“.",
                                           "parameters": {"type": "object", "properties": {}}}}]


def sdk_bytes(body: dict[str, Any]) -> bytes:
    """What the SDK sends for a body it is given (openai's openapi_dumps; httpx's json= before it)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def turn(i: int) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": "", "tool_calls": [
                {"id": f"c{i}", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"ä.txt"}'}}]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"line {i}\n\ttab \u2028 emoji 🙂 \"quoted\" \\"}]


def test_a_growing_conversation_is_encoded_as_the_sdk_would_at_every_step() -> None:
    encoder = BodyEncoder()
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Sé breve."}, {"role": "user", "content": "go"}]
    for i in range(5):
        body = {"model": "m", "messages": messages, "tools": TOOLS, "temperature": 0.5, "stream": True,
                "stream_options": {"include_usage": True}}
        assert encoder.encode(body) == sdk_bytes(body)
        messages.extend(turn(i))


def test_a_message_is_encoded_once_while_the_list_starts_with_the_same_objects() -> None:
    growing, first = GrowingList(), {"role": "user", "content": "one"}
    messages = [first]
    assert growing.encode(messages) == b'[{"role":"user","content":"one"}]'
    # Messages are never changed in place (agent/history.py); one that were would keep its first bytes,
    # which shows they are reused rather than encoded again.
    first["content"] = "changed"
    messages.append({"role": "user", "content": "two"})
    assert growing.encode(messages) == b'[{"role":"user","content":"one"},{"role":"user","content":"two"}]'


@pytest.mark.parametrize("replaced", ["shorter", "other objects"])
def test_a_replaced_history_is_encoded_afresh(replaced: str) -> None:
    growing = GrowingList()
    messages = [{"role": "user", "content": str(i)} for i in range(3)]
    growing.encode(messages)
    new = messages[:1] if replaced == "shorter" else [dict(m, content="x") for m in messages]
    assert growing.encode(new) == sdk_bytes(new)  # type: ignore[arg-type]


def test_a_lone_surrogate_is_escaped_and_what_json_cannot_hold_fails_leaving_the_encoding_as_it_was() -> None:
    growing = GrowingList()
    messages: list[Any] = [{"role": "user", "content": "ok é"}]
    growing.encode(messages)
    for bad in ({"role": "user", "content": float("nan")}, {"role": "user", "content": datetime.date(2026, 1, 2)}):
        with pytest.raises((ValueError, TypeError)):
            growing.encode([*messages, bad])
    assert growing.encode(messages) == sdk_bytes(messages)  # type: ignore[arg-type]
    # JSON from the model may hold "\ud800": it has no UTF-8 form, so it goes as JSON escapes it.
    lone = {"role": "assistant", "content": "a\ud800é"}
    assert growing.encode([*messages, lone]).endswith(b',{"role":"assistant","content":"a\\ud800\\u00e9"}]')
    assert json.loads(growing.encode([*messages, lone]))[1] == lone


@pytest.mark.parametrize("stream", [True, False])
def test_the_client_sends_the_sdks_bytes_and_what_json_cannot_hold_is_a_clear_error(stream: bool) -> None:
    """Through the real SDK and server: the body nami encodes is byte for byte the one the SDK encodes; a
    lone surrogate from the model reaches the server as the same text; an option JSON cannot hold (a date
    YAML read) is a ModelError saying so, not a traceback."""
    history = [{"role": "user", "content": "héllo"}, *turn(0)]
    with FakeOpenAIServer([text("a"), text("b"), text("c")]) as srv:
        ours = OpenAIChatModel("m", srv.base_url, "k", max_retries=0, stream=stream)
        ours.complete(history, TOOLS)
        theirs = OpenAIChatModel("m", srv.base_url, "k", max_retries=0, stream=stream)
        theirs._client()
        theirs._takes_bytes = False  # as with an SDK whose post() takes no bytes: it encodes the body itself
        theirs.complete(history, TOOLS)
        lone = [*history, {"role": "assistant", "content": "\ud800"}, {"role": "user", "content": "and?"}]
        ours.complete(lone, TOOLS)
        dated = OpenAIChatModel("m", srv.base_url, "k", max_retries=0, stream=stream,
                                options={"metadata": {"day": datetime.date(2026, 12, 2)}})
        with pytest.raises(ModelError, match=r"cannot be sent as JSON: Object of type date .*quote it"):
            dated.complete(history, TOOLS)
    assert ours._takes_bytes  # this SDK takes bytes: the first request went as nami encoded it
    assert srv.raw_requests[0] == srv.raw_requests[1]
    assert srv.requests[2]["messages"] == lone
    assert len(srv.requests) == 3  # the dated request never went out
