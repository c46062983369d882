"""The loop's limits on one model response: calls past limits.max_tool_calls_per_turn are answered and do
not run, and a response past max_response_bytes ends the run with nothing of it in the history. The real
client, the fake server on 127.0.0.1."""

from __future__ import annotations

from typing import Any

from nami_yaml.agent.tool_phase import TOO_MANY
from nami_yaml.testing.fake_server import FakeOpenAIServer, call, text, tool_calls
from tests.agent.test_loop import _history, _tool_messages


def test_calls_past_the_limit_get_an_error_result_and_do_not_run(harness: Any, server: FakeOpenAIServer) -> None:
    server.add(tool_calls(*(call("echo", {"text": f"n{i}"}, id=f"call_{i}") for i in range(100))), text("done"))
    messages = _history()
    outcome = harness.loop(max_tool_calls_per_turn=64).run(messages)

    assert outcome.status == "answered" and outcome.final_text == "done"
    # The side effects: the first 64 calls ran (reads, so side by side, in any order), the others not.
    assert sorted(harness.toolbox.ran) == sorted(f"echo:n{i}" for i in range(64))
    # Every call id has its tool message, in order, so the next request is valid for the protocol (the
    # fake server is strict: it refuses a call without an answer) and was answered.
    answers = _tool_messages(messages)
    assert [m["tool_call_id"] for m in answers] == [f"call_{i}" for i in range(100)]
    assert [m["content"] for m in answers[:64]] == [f"n{i}" for i in range(64)]
    refused = TOO_MANY.format(made=100, limit=64)
    assert all(m["content"] == refused for m in answers[64:])
    assert "limits.max_tool_calls_per_turn" in refused and refused.startswith("Error: Not run")
    assert len(server.requests) == 2 and _tool_messages(server.requests[1]["messages"]) == answers
    results = harness.of_type("tool_result")
    assert {r["id"]: r["ok"] for r in results} == {f"call_{i}": i < 64 for i in range(100)}


def test_a_response_past_the_byte_limit_ends_the_run_and_keeps_nothing(harness: Any,
                                                                      server: FakeOpenAIServer) -> None:
    server.add(tool_calls(call("echo", {"text": "e" * 50_000})), text("never asked for"))
    messages = _history()
    before = list(messages)
    outcome = harness.loop(max_response_bytes=10_000, max_retries=2).run(messages)

    assert outcome.status == "error" and "limits.max_response_bytes" in (outcome.error or "")
    assert messages == before and harness.toolbox.ran == []
    assert len(server.requests) == 1  # one clear error, not a retry of the same endless answer
    assert [e["message"] for e in harness.of_type("error")] == [outcome.error]
