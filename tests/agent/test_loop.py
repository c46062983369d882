"""The loop against a real HTTP server speaking the OpenAI wire protocol, through the real openai SDK."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from nami_yaml.agent.hooks import CallRecord, Decision, Hooks
from nami_yaml.agent.loop import INTERRUPTED_MARK
from nami_yaml.agent.tool_phase import ABANDONED, CUT_OFF, INTERRUPTED, NOT_RUN, STOPPED
from nami_yaml.testing.fake_server import FakeOpenAIServer, call, error, text, tool_calls
from tests.helpers import json_span

USER = [{"role": "user", "content": "do the thing"}]


def _history() -> list[dict[str, Any]]:
    return [{"role": "system", "content": "You are a test."}, *json.loads(json.dumps(USER))]


def _tool_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m["role"] == "tool"]


def _call_ids(message: dict[str, Any]) -> list[str]:
    return [c["id"] for c in message["tool_calls"]]


def _ctrl_c_when(condition: Any, *, timeout: float = 30.0) -> threading.Thread:
    """Deliver SIGINT to the main thread (what Ctrl-C does) once ``condition()`` holds."""

    def fire() -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                return
            time.sleep(0.02)
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    thread = threading.Thread(target=fire, daemon=True)
    thread.start()
    return thread


def test_text_answer_streams_and_reports_usage(harness: Any, server: FakeOpenAIServer) -> None:
    server.add(text("Hello there, operator."))
    messages = _history()
    outcome = harness.loop().run(messages)

    assert outcome.status == "answered"
    assert outcome.final_text == "Hello there, operator."
    assert outcome.steps == 1 and outcome.error is None
    assert messages[-1] == {"role": "assistant", "content": "Hello there, operator."}
    deltas = harness.of_type("text_delta")
    assert len(deltas) > 1 and "".join(d["text"] for d in deltas) == "Hello there, operator."
    assert harness.of_type("message") == [{"type": "message", "content": "Hello there, operator."}]
    [step] = harness.of_type("usage")  # the server's report of the request, as the loop got it
    assert step["prompt_tokens"] > 0 and step["completion_tokens"] > 0
    final = harness.events[-1].to_json()
    assert final["type"] == "final" and final["status"] == "answered"
    # The loop counts nothing itself: with no accounting hook (an Agent has its meter), there are no totals.
    assert final["totals"] is None and final["usage_reported"] is False and outcome.totals == {}
    assert server.requests[0]["tools"] == harness.toolbox.definitions()


def test_tool_call_then_answer(harness: Any, server: FakeOpenAIServer) -> None:
    server.add(tool_calls(call("echo", {"text": "pong"}), content="Let me check."), text("It said pong."))
    messages = _history()
    outcome = harness.loop().run(messages)

    assert outcome.status == "answered" and outcome.final_text == "It said pong." and outcome.steps == 2
    assistant, tool, final = messages[2:]
    assert assistant["role"] == "assistant" and assistant["content"] == "Let me check."
    [call_id] = _call_ids(assistant)
    assert tool == {"role": "tool", "tool_call_id": call_id, "content": "pong"}
    assert final == {"role": "assistant", "content": "It said pong."}
    assert server.requests[1]["messages"] == messages[:4]

    [tc] = harness.of_type("tool_call")
    assert tc == {"type": "tool_call", "id": call_id, "name": "echo", "arguments": {"text": "pong"},
                  "summary": "echo text=pong"}
    [tr] = harness.of_type("tool_result")
    assert tr["id"] == call_id and tr["ok"] is True and tr["content"] == "pong"
    per_step = harness.of_type("usage")
    assert len(per_step) == 2 and all(u["prompt_tokens"] > 0 for u in per_step)
    assert harness.approvals == []  # read tools never ask
    for event in harness.events:
        line = json.dumps(event.to_json())
        assert json.loads(line)["type"] == event.type


def test_errors_come_back_as_results_and_the_loop_goes_on(harness: Any, server: FakeOpenAIServer) -> None:
    server.add(
        tool_calls(call("nope", {}), call("echo", '{"text": "unterminated'), call("echo", {"text": 5}),
                   call("fail", {})),
        text("I will stop guessing."),
    )
    messages = _history()
    outcome = harness.loop().run(messages)

    assert outcome.status == "answered" and outcome.final_text == "I will stop guessing."
    ids = _call_ids(messages[2])
    results = _tool_messages(messages)
    assert [m["tool_call_id"] for m in results] == ids
    unknown, bad_json, bad_schema, failed = (m["content"] for m in results)
    assert unknown.startswith("Error: unknown tool 'nope'") and "echo" in unknown
    assert bad_json.startswith("Error: arguments of echo are not valid JSON")
    assert bad_schema.startswith("Error: invalid arguments for echo") and "5" in bad_schema
    assert failed == "Error: the disk is on fire"
    assert harness.toolbox.ran == ["fail"]  # the broken calls never ran
    calls = harness.of_type("tool_call")
    assert calls[1]["arguments"] == '{"text": "unterminated'  # raw text when it does not parse
    oks = {r["id"]: r["ok"] for r in harness.of_type("tool_result")}
    assert oks == dict.fromkeys(ids, False)
    assert harness.of_type("tool_result")[3]["details"] == {"code": 7}


def test_parallel_reads_overlap_and_answer_in_call_order(harness: Any, server: FakeOpenAIServer) -> None:
    server.add(
        tool_calls(call("sleep_read", {"seconds": 1.5, "label": "a"}),
                   call("sleep_read", {"seconds": 1.0, "label": "b"}),
                   call("sleep_read", {"seconds": 1.2, "label": "c"})),
        text("all slept"),
    )
    messages = _history()
    outcome = harness.loop().run(messages)

    assert outcome.status == "answered"
    ids = _call_ids(messages[2])
    results = _tool_messages(messages)
    assert [m["tool_call_id"] for m in results] == ids
    assert [m["content"] for m in results] == ["slept a", "slept b", "slept c"]
    intervals = harness.toolbox.intervals
    assert len(intervals) == 3
    # All three were running at once: every start precedes every end.
    assert max(start for _, start, _ in intervals) < min(end for _, _, end in intervals)


def test_parallelism_is_bounded(harness: Any, server: FakeOpenAIServer) -> None:
    server.add(
        tool_calls(*(call("sleep_read", {"seconds": 0.6, "label": str(i)}) for i in range(5))),
        text("done"),
    )
    harness.loop(max_parallel_tools=2).run(_history())

    points = sorted([(s, 1) for _, s, _ in harness.toolbox.intervals] + [(e, -1) for _, _, e in
                                                                           harness.toolbox.intervals])
    level = peak = 0
    for _, step in points:
        level += step
        peak = max(peak, level)
    assert len(harness.toolbox.intervals) == 5
    assert peak == 2


def test_write_calls_run_one_by_one_after_approval(harness: Any, server: FakeOpenAIServer) -> None:
    server.add(
        tool_calls(call("write_note", {"path": "a.txt", "text": "alpha"}),
                   call("write_note", {"path": "b.txt", "text": "beta"}),
                   call("read_note", {"path": "b.txt"}),
                   call("write_note", {"path": "c.txt", "text": "gamma"})),
        text("written"),
    )
    messages = _history()
    outcome = harness.loop().run(messages)

    assert outcome.status == "answered"
    assert harness.approvals == ["write_note path=a.txt text=alpha", "write_note path=b.txt text=beta",
                                 "write_note path=c.txt text=gamma"]
    assert [a["approved"] for a in harness.of_type("approval")] == [True, True, True]
    # Writes never overlap, and a read that follows a write sees it.
    spans = sorted((s, e) for _, s, e in harness.toolbox.intervals)
    assert len(spans) == 3
    assert all(prev_end <= next_start for (_, prev_end), (next_start, _) in zip(spans, spans[1:], strict=False))
    assert harness.toolbox.ran == ["write:a.txt", "write:b.txt", "read:b.txt", "write:c.txt"]
    assert [m["content"] for m in _tool_messages(messages)] == [
        "wrote 5 chars to a.txt", "wrote 4 chars to b.txt", "beta", "wrote 5 chars to c.txt"]
    assert (harness.ctx.workspace / "c.txt").read_text() == "gamma"


@pytest.mark.parametrize("tool", ["write_note", "write_note_here"], ids=["on a worker", "on the loop's thread"])
def test_a_call_is_decided_after_the_one_before_it_was_recorded(harness: Any, server: FakeOpenAIServer,
                                                                 tool: str) -> None:
    """An audit log that failed on one call refuses the next (no tool runs without a record): the next call
    is decided only after the after_tool hooks of the one before it, wherever that one ran."""
    order: list[str] = []
    failed: list[bool] = []

    def before(call: Any) -> Decision | None:
        order.append(f"decide {call.arguments['path']}")
        return Decision.deny("the audit log cannot be written", "audit log") if failed else Decision.allow()

    def after(record: CallRecord) -> None:
        order.append(f"recorded {record.call.id}")
        failed.append(True)

    server.add(tool_calls(call(tool, {"path": "a.txt", "text": "1"}), call(tool, {"path": "b.txt", "text": "2"})))
    messages = _history()
    harness.loop(hooks=Hooks(before_tool=[before], after_tool=[after], ask=harness.approve)).run(messages)
    assert order[:3] == ["decide a.txt", "recorded call_1_0", "decide b.txt"]
    assert (harness.ctx.workspace / "a.txt").exists() and not (harness.ctx.workspace / "b.txt").exists()
    assert "audit log" in _tool_messages(messages)[1]["content"]


def test_denied_approval_is_a_result(harness: Any, server: FakeOpenAIServer) -> None:
    harness.answer = False
    server.add(tool_calls(call("write_note", {"path": "x.txt", "text": "no"})), text("OK, I will not."))
    messages = _history()
    outcome = harness.loop().run(messages)

    assert outcome.status == "answered"
    [result] = _tool_messages(messages)
    assert result["content"] == ("Denied by the user: write_note path=x.txt text=no. "
                                 "Do not retry the same call; ask the user or try another way.")
    assert not (harness.ctx.workspace / "x.txt").exists()
    assert [a["approved"] for a in harness.of_type("approval")] == [False]
    assert harness.of_type("tool_result")[0]["ok"] is False


def test_cut_off_response_never_runs_its_calls(harness: Any, server: FakeOpenAIServer) -> None:
    server.add(
        tool_calls(call("echo", {"text": "fine"}), call("write_note", '{"path": "x.txt", "text": "abc'),
                   finish_reason="length"),
        text("I will write less."),
    )
    messages = _history()
    outcome = harness.loop().run(messages)

    assert outcome.status == "answered"
    results = _tool_messages(messages)
    assert [m["tool_call_id"] for m in results] == _call_ids(messages[2])
    assert [m["content"] for m in results] == [CUT_OFF, CUT_OFF]
    assert "cut off" in CUT_OFF and "shorter" in CUT_OFF
    assert harness.toolbox.ran == [] and harness.approvals == []
    assert not (harness.ctx.workspace / "x.txt").exists()


def test_max_steps_has_its_own_status(harness: Any, server: FakeOpenAIServer) -> None:
    server.responder = lambda body: tool_calls(call("echo", {"text": "again"}))
    messages = _history()
    outcome = harness.loop(max_steps=3).run(messages)

    assert outcome.status == "max_steps" and outcome.steps == 3
    assert outcome.final_text is None and outcome.error is not None and "3 steps" in outcome.error
    assert len(server.requests) == 3
    assert messages[-1]["role"] == "tool"  # the transcript stays valid for the next turn
    final = harness.events[-1].to_json()
    assert final["status"] == "max_steps" and final["error"] == outcome.error


def test_server_error_then_success_through_sdk_retry(harness: Any, server: FakeOpenAIServer) -> None:
    server.add(error(500, "overloaded", retry_after=0.05), text("recovered"))
    outcome = harness.loop(max_retries=2).run(_history())

    assert outcome.status == "answered" and outcome.final_text == "recovered"
    assert len(server.requests) == 2
    assert server.requests[0]["messages"] == server.requests[1]["messages"]


def test_model_error_ends_the_run(harness: Any, server: FakeOpenAIServer) -> None:
    server.add(error(401, "Incorrect API key provided"))
    messages = _history()
    outcome = harness.loop().run(messages)

    assert outcome.status == "error"
    assert outcome.error and outcome.final_text is None and outcome.steps == 0
    assert messages == _history()
    [err] = harness.of_type("error")
    assert err["message"] == outcome.error
    assert harness.events[-1].to_json()["status"] == "error"


def test_ctrl_c_while_a_tool_runs_answers_every_call(harness: Any, server: FakeOpenAIServer) -> None:
    server.add(tool_calls(call("echo", {"text": "first"}), call("block", {}), call("echo", {"text": "later"})))
    messages = _history()
    loop = harness.loop()
    _ctrl_c_when(lambda: "block:started" in harness.toolbox.ran)
    outcome = loop.run(messages)

    assert outcome.status == "interrupted"
    assert harness.ctx.cancel.is_set()
    results = _tool_messages(messages)
    assert [m["tool_call_id"] for m in results] == _call_ids(messages[2])
    first, blocked, later = (m["content"] for m in results)
    assert first == "first"
    assert blocked.startswith("Error: Interrupted by the user while this call was running")
    assert "partial output: tick" in blocked
    assert later == NOT_RUN
    assert harness.toolbox.ran == ["echo:first", "block:started"]
    [pid] = harness.toolbox.pids
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the child's process group was killed and reaped
    assert {r["id"] for r in harness.of_type("tool_result")} == set(_call_ids(messages[2]))
    assert harness.events[-1].to_json()["status"] == "interrupted"

    # The transcript is valid for a strict server, and the next run starts with the cancel switch off.
    messages.append({"role": "user", "content": "go on"})
    server.add(text("resumed"))
    again = loop.run(messages)
    assert again.status == "answered" and not harness.ctx.cancel.is_set()


@pytest.fixture
def python_sigint() -> Iterator[None]:
    """Python's own SIGINT handler, as `nami run` has it (a test runner may have put one of its own)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_lone_call_that_stops_when_cancelled_runs_on_the_loop_thread(harness: Any, server: FakeOpenAIServer,
                                                                       python_sigint: None) -> None:
    server.add(tool_calls(call("echo", {"text": "first"}), call("block_here", {})))
    messages = _history()
    _ctrl_c_when(lambda: "block:started" in harness.toolbox.ran)
    outcome = harness.loop().run(messages)

    # Ctrl-C on the loop's thread cancelled the call instead of raising: it kept what it had.
    assert harness.toolbox.threads == ["MainThread"]
    assert outcome.status == "interrupted" and harness.ctx.cancel.is_set()
    first, blocked = (m["content"] for m in _tool_messages(messages))
    assert first == "first"
    assert blocked.startswith(INTERRUPTED) and "partial output: tick" in blocked
    [pid] = harness.toolbox.pids
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # given back


def test_after_a_ctrl_c_on_the_loop_thread_no_further_call_starts(harness: Any, server: FakeOpenAIServer,
                                                                  python_sigint: None) -> None:
    server.add(tool_calls(call("block_here", {}), call("block_here", {})))
    messages = _history()
    _ctrl_c_when(lambda: "block:started" in harness.toolbox.ran)
    outcome = harness.loop().run(messages)

    assert outcome.status == "interrupted"
    assert harness.toolbox.ran.count("block:started") == 1 and harness.toolbox.threads == ["MainThread"]
    first, second = (m["content"] for m in _tool_messages(messages))
    assert first.startswith(INTERRUPTED) and second == NOT_RUN


def test_a_second_ctrl_c_stops_a_call_on_the_loop_thread_where_it_is(harness: Any, server: FakeOpenAIServer,
                                                                    python_sigint: None) -> None:
    server.add(tool_calls(call("stubborn_here", {})))
    messages = _history()
    _ctrl_c_when(lambda: "stubborn:started" in harness.toolbox.ran)
    _ctrl_c_when(lambda: harness.ctx.cancel.is_set())
    try:
        outcome = harness.loop().run(messages)
    finally:
        harness.toolbox.release.set()

    assert harness.toolbox.threads == ["MainThread"] and "stubborn:ended" not in harness.toolbox.ran
    assert outcome.status == "interrupted"
    [result] = _tool_messages(messages)
    assert result["content"] == f"{INTERRUPTED} What it returned:\n{STOPPED}"


def test_calls_that_run_side_by_side_stay_on_workers(harness: Any, server: FakeOpenAIServer,
                                                     python_sigint: None) -> None:
    server.add(tool_calls(call("nap", {"seconds": 0.6, "label": "a"}), call("nap", {"seconds": 0.6, "label": "b"})),
               text("done"))
    outcome = harness.loop().run(_history())
    assert outcome.status == "answered"
    (_, start_a, end_a), (_, start_b, end_b) = sorted(harness.toolbox.intervals)
    assert start_b < end_a and start_a < end_b  # they overlapped


def test_a_tool_ignoring_cancel_is_abandoned_after_the_grace_period(harness: Any,
                                                                  server: FakeOpenAIServer) -> None:
    server.add(tool_calls(call("stubborn", {}), call("echo", {"text": "quick"})))
    messages = _history()
    # Ctrl-C once the quick read's result is in, so only the stubborn one is still running.
    _ctrl_c_when(lambda: "stubborn:started" in harness.toolbox.ran
                 and any(getattr(e, "content", None) == "quick" for e in list(harness.events)))
    try:
        outcome = harness.loop(interrupt_grace=0.5).run(messages)
        # The run came back while the tool was still stuck.
        assert "stubborn:ended" not in harness.toolbox.ran
    finally:
        harness.toolbox.release.set()

    assert outcome.status == "interrupted"
    stubborn, echo = (m["content"] for m in _tool_messages(messages))
    assert stubborn == ABANDONED
    assert echo == "quick"  # finished before Ctrl-C: its real result is kept
    assert [r["content"] for r in harness.of_type("tool_result")].count(ABANDONED) == 1


def test_a_lone_tool_ignoring_cancel_is_abandoned_after_ctrl_c(harness: Any, server: FakeOpenAIServer,
                                                               python_sigint: None) -> None:
    """A call alone in its turn that may not stop (a Python function inside nami) runs on a worker, and the
    loop's thread waits for it on its own: a Ctrl-C there still returns control once the grace is over."""
    server.add(tool_calls(call("stubborn", {})))
    messages = _history()
    _ctrl_c_when(lambda: "stubborn:started" in harness.toolbox.ran)
    try:
        outcome = harness.loop(interrupt_grace=0.5).run(messages)
        assert "stubborn:ended" not in harness.toolbox.ran  # the run came back while the tool was stuck
    finally:
        harness.toolbox.release.set()

    assert harness.toolbox.threads == ["nami-tool-stubborn"]
    assert outcome.status == "interrupted"
    [result] = _tool_messages(messages)
    assert result["content"] == ABANDONED
    assert [r["content"] for r in harness.of_type("tool_result")] == [ABANDONED]


def test_an_approval_that_fails_is_a_denial(harness: Any, server: FakeOpenAIServer) -> None:
    def broken(call: Any, pending: Any) -> bool:
        raise EOFError("stdin is closed")

    server.add(tool_calls(call("write_note", {"path": "y.txt", "text": "y"})), text("understood"))
    messages = _history()
    loop = harness.loop()
    loop.hooks.ask = broken
    outcome = loop.run(messages)

    assert outcome.status == "answered"
    [result] = _tool_messages(messages)
    assert result["content"].startswith("Denied by the user: write_note path=y.txt text=y.")
    assert harness.of_type("tool_result")[0]["details"] == {"denied": True,
                                                            "approval_error": "EOFError: stdin is closed"}
    assert not (harness.ctx.workspace / "y.txt").exists()


def test_cancel_set_elsewhere_stops_tools(harness: Any, server: FakeOpenAIServer) -> None:
    server.add(tool_calls(call("block", {}), call("echo", {"text": "never"})))
    messages = _history()

    def cancel_when_started() -> None:
        while "block:started" not in harness.toolbox.ran:
            time.sleep(0.02)
        harness.ctx.cancel.set()

    threading.Thread(target=cancel_when_started, daemon=True).start()
    outcome = harness.loop().run(messages)

    assert outcome.status == "interrupted"
    contents = [m["content"] for m in _tool_messages(messages)]
    assert contents[0].startswith("Error: Interrupted by the user") and contents[1] == NOT_RUN


def test_ctrl_c_during_the_model_request_keeps_the_partial_answer_marked(harness: Any,
                                                                         server: FakeOpenAIServer) -> None:
    server.add(text("one two three four five six seven eight nine ten", chunk_delay=0.5),
               text("Going on."))
    messages = _history()
    _ctrl_c_when(lambda: bool(harness.of_type("text_delta")))
    outcome = harness.loop().run(messages)

    assert outcome.status == "interrupted" and outcome.steps == 0
    streamed = "".join(d["text"] for d in harness.of_type("text_delta"))
    assert streamed and streamed != "one two three four five six seven eight nine ten"
    # What the user saw stays in the conversation, marked, as a plain assistant message.
    assert messages[:-1] == _history()
    assert messages[-1] == {"role": "assistant", "content": f"{streamed.rstrip()}\n\n{INTERRUPTED_MARK}"}
    # ... and the next request the strict server accepts goes on from there.
    messages.append({"role": "user", "content": "go on"})
    assert harness.loop().run(messages).final_text == "Going on."
    assert server.requests[-1]["messages"][-2]["content"].endswith(INTERRUPTED_MARK)


def test_request_prefix_is_byte_stable_over_20_steps(harness: Any, server: FakeOpenAIServer) -> None:
    for i in range(19):
        if i % 3 == 0:
            server.add(tool_calls(call("sleep_read", {"seconds": 0.01, "label": f"s{i}"}),
                                  call("echo", {"text": f"e{i}"}), content=f"step {i}"))
        else:
            server.add(tool_calls(call("echo", {"text": f"only {i}"})))
    server.add(text("twenty"))
    messages = _history()
    outcome = harness.loop().run(messages)

    assert outcome.status == "answered" and outcome.steps == 20
    assert harness.toolbox.definitions_calls == 20  # asked before each request: a tool may load more
    raws = server.raw_requests
    assert len(raws) == 20
    spans = [(json_span(raw, b'"messages"'), json_span(raw, b'"tools"')) for raw in raws]
    for (msgs, tools), (next_msgs, next_tools) in zip(spans, spans[1:], strict=False):
        assert tools == next_tools
        assert next_msgs.startswith(msgs[:-1])  # all but the closing "]"
        assert len(next_msgs) > len(msgs)
    # As sent: an assistant turn with only tool calls has "" for content (strict servers refuse null).
    assert json.loads(spans[-1][0]) == [{**m, "content": ""} if m["role"] == "assistant" and m["content"] is None
                                        else m for m in messages[:-1]]


