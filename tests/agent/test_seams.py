"""The loop's seams: a decision for every call, approval, after_tool, before_request, history events,
several sinks. Driven by the in-memory ScriptedModel; the HTTP path is covered by test_loop.py."""

from __future__ import annotations

import json
from typing import Any

from nami_yaml.agent import (
    AgentLoop,
    CallRecord,
    Decision,
    Event,
    EventBus,
    History,
    Hooks,
    RequestInfo,
    StopRun,
    strictest,
)
from nami_yaml.agent.hooks import strictest_opinion
from nami_yaml.model.types import ModelError, Usage
from nami_yaml.testing import ScriptedModel, call, text, tool_calls, usage

SYSTEM = {"role": "system", "content": "You are a test."}


def run(model: ScriptedModel, toolbox: Any, hooks: Hooks, *sinks: Any, **options: Any) -> tuple[Any, list[Any]]:
    events: list[Event] = []
    loop = AgentLoop(model=model, toolbox=toolbox, hooks=hooks, cancel=toolbox.ctx.cancel,
                     events=EventBus(events.append, *sinks), **options)
    history = History([dict(SYSTEM), {"role": "user", "content": "go"}], emit=loop.events)
    return loop.run(history), events


def tool_contents(model: ScriptedModel, request: int) -> list[str]:
    return [m["content"] for m in model.requests[request]["messages"] if m["role"] == "tool"]


def of_type(events: list[Any], kind: str) -> list[dict[str, Any]]:
    return [e.to_json() for e in events if e.type == kind]


def test_strictest_decision_wins() -> None:
    allow, ask, deny = Decision.allow(source="a"), Decision.ask(source="b"), Decision.deny(source="c")
    assert strictest([allow, None, ask]) == ask
    assert strictest([ask, deny, allow]) == deny
    assert strictest([None, None]) is None
    assert strictest([Decision.deny(source="first"), Decision.deny(source="second")]).source == "first"


def test_the_strictest_opinion_of_every_guard_wins_and_a_broken_guard_denies() -> None:
    # The one aggregation the loop, Guards.decide and the sandbox rerun all use.
    def says(decision: Decision | None) -> Any:
        return lambda call: decision

    def broken(call: Any) -> Decision | None:
        raise RuntimeError("boom")

    allow, ask, deny = Decision.allow(source="a"), Decision.ask(source="b"), Decision.deny(source="c")
    call = object()
    assert strictest_opinion([says(allow), says(ask)], call) == ask  # ask beats allow
    assert strictest_opinion([says(ask), says(deny), says(allow)], call) == deny  # deny beats ask
    assert strictest_opinion([says(allow), says(None)], call) == allow  # "no opinion" loosens nothing
    assert strictest_opinion([says(None)], call) is None
    assert strictest_opinion([says(ask)], call, given=[deny]) == deny  # opinions already formed count
    assert strictest_opinion([says(deny)], call, given=[allow]) == deny
    # A guard that raises denies, whatever the others allow, and names what failed; the guards after it
    # still count (an earlier deny of equal strictness is the one reported).
    failed = strictest_opinion([says(allow), broken, says(allow)], call, given=[allow])
    assert failed == Decision.deny("the policy failed: RuntimeError: boom", "policy")
    assert strictest_opinion([says(deny), broken], call) == deny
    seen: list[Any] = []
    strictest_opinion([broken, lambda c: seen.append(c)], call)
    assert seen == [call]


def test_a_deny_on_a_read_tool_reaches_the_model_with_its_reason(toolbox: Any) -> None:
    def no_secrets(call: Any) -> Decision | None:
        if call.name == "read_note" and call.arguments["path"].endswith(".env"):
            return Decision.deny("reading .env files is not allowed", "rule agent.yaml:12:5")
        return None

    model = ScriptedModel([tool_calls(call("read_note", {"path": "app/.env"}), call("echo", {"text": "hi"})),
                           text("understood")])
    outcome, events = run(model, toolbox, Hooks(before_tool=[no_secrets]))

    assert outcome.status == "answered"
    denied, echoed = tool_contents(model, 1)
    assert denied == ("Denied by rule agent.yaml:12:5: read_note path=app/.env. Reason: reading .env files is "
                      "not allowed. Do not retry the same call; ask the user or try another way.")
    assert echoed == "hi"
    assert toolbox.ran == ["echo:hi"]  # the denied read never ran
    [approval] = of_type(events, "approval")
    assert approval == {"type": "approval", "id": approval["id"], "name": "read_note", "approved": False,
                        "reason": "reading .env files is not allowed", "source": "rule agent.yaml:12:5"}
    result = of_type(events, "tool_result")[0]
    assert result["details"] == {"denied": True, "reason": "reading .env files is not allowed",
                                 "source": "rule agent.yaml:12:5"}


def test_a_read_that_must_ask_runs_alone(toolbox: Any) -> None:
    asked: list[str] = []

    def ask_about_b(call: Any) -> Decision | None:
        return Decision.ask("b is sensitive", "test") if call.arguments.get("label") == "b" else None

    def answer(call: Any, pending: Decision) -> bool:
        asked.append(f"{call.arguments['label']}:{pending.reason}")
        return True

    model = ScriptedModel([
        tool_calls(*(call("sleep_read", {"seconds": 0.3, "label": label}) for label in "abc")),
        text("done"),
    ])
    outcome, events = run(model, toolbox, Hooks(before_tool=[ask_about_b], ask=answer))

    assert outcome.status == "answered" and asked == ["b:b is sensitive"]
    spans = {label: (start, end) for label, start, end in toolbox.intervals}
    # a runs alone before b is asked; b runs alone; c starts after b ended.
    assert spans["a"][1] <= spans["b"][0] and spans["b"][1] <= spans["c"][0]
    assert [a["approved"] for a in of_type(events, "approval")] == [True]


def test_reads_that_need_no_approval_still_run_together(toolbox: Any) -> None:
    model = ScriptedModel([tool_calls(*(call("sleep_read", {"seconds": 0.4, "label": x}) for x in "ab")),
                           text("done")])
    run(model, toolbox, Hooks())
    (_, a_start, a_end), (_, b_start, b_end) = sorted(toolbox.intervals)
    assert a_start < b_end and b_start < a_end  # overlapping


def test_a_policy_that_fails_denies(toolbox: Any) -> None:
    def broken(call: Any) -> Decision:
        raise RuntimeError("rules file vanished")

    model = ScriptedModel([tool_calls(call("echo", {"text": "x"})), text("ok")])
    run(model, toolbox, Hooks(before_tool=[broken]))
    [content] = tool_contents(model, 1)
    assert content.startswith("Denied by policy: echo text=x. Reason: the policy failed: RuntimeError: rules file")
    assert toolbox.ran == []


def test_with_nobody_to_ask_a_write_is_refused(toolbox: Any) -> None:
    model = ScriptedModel([tool_calls(call("write_note", {"path": "a.txt", "text": "x"})), text("ok")])
    run(model, toolbox, Hooks())
    [content] = tool_contents(model, 1)
    assert "approval is needed and there is no one to ask" in content
    assert not (toolbox.ctx.workspace / "a.txt").exists()


def test_the_user_can_say_no_with_a_reason(toolbox: Any) -> None:
    def answer(call: Any, pending: Decision) -> Decision:
        return Decision.deny("use b.txt instead", "user")

    model = ScriptedModel([tool_calls(call("write_note", {"path": "a.txt", "text": "x"})), text("ok")])
    run(model, toolbox, Hooks(ask=answer))
    assert tool_contents(model, 1) == [
        "Denied by the user: write_note path=a.txt text=x. The user said: use b.txt instead. "
        "Do not retry the same call; ask the user or try another way."]


def test_after_tool_sees_every_call_with_its_decision(toolbox: Any) -> None:
    records: list[CallRecord] = []
    model = ScriptedModel([
        tool_calls(call("echo", {"text": "a"}), call("nope", {}), call("write_note", {"path": "n.txt", "text": "t"})),
        text("ok"),
    ])
    run(model, toolbox, Hooks(ask=lambda call, pending: True, after_tool=[records.append]))

    by_name = {r.call.name: r for r in records}
    assert len(records) == 3
    echo, unknown, write = by_name["echo"], by_name["nope"], by_name["write_note"]
    assert echo.call.name == "echo" and echo.result.content == "a" and echo.decision == Decision.allow()
    assert echo.duration is not None and echo.duration >= 0
    assert unknown.prepared is None and unknown.decision is None and not unknown.result.ok
    assert write.decision == Decision.allow(source="user") and write.result.ok
    assert write.call.arguments == json.dumps({"path": "n.txt", "text": "t"})  # raw, as the model sent it


def test_before_request_sees_usage_and_may_replace_the_history(toolbox: Any) -> None:
    seen: list[tuple[int, Usage | None]] = []

    def compact(info: RequestInfo) -> list[dict[str, Any]] | None:
        seen.append((info.step, info.last_usage))
        if info.step == 2:
            return [info.history[0], {"role": "user", "content": "summary: the echo said a"}]
        return None

    model = ScriptedModel([tool_calls(call("echo", {"text": "a"}), usage=usage(100, 7)), text("ok")])
    outcome, events = run(model, toolbox, Hooks(before_request=[compact]))

    assert outcome.status == "answered"
    assert [step for step, _ in seen] == [1, 2]
    assert seen[0][1] is None and seen[1][1] == Usage(100, 7, 0)
    assert model.requests[1]["messages"] == [SYSTEM, {"role": "user", "content": "summary: the echo said a"}]
    [replaced] = of_type(events, "history_replace")
    assert replaced["reason"] == "compaction" and len(replaced["messages"]) == 2


class ContextTooLong:
    """Refuses a long prompt the way providers do, until the history has been shortened."""

    def __init__(self, limit: int):
        self.limit = limit
        self.inner = ScriptedModel([text("fits now")])

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], on_text: Any = None) -> Any:
        if len(json.dumps(messages)) > self.limit:
            raise ModelError("this model's maximum context length is exceeded", status=400, kind="context_length")
        return self.inner.complete(messages, tools, on_text)


def test_a_context_length_error_is_retried_once_after_compaction(toolbox: Any) -> None:
    errors: list[str] = []

    def compact(info: RequestInfo) -> list[dict[str, Any]] | None:
        if info.error is None:
            return None
        errors.append(str(info.error))
        return [info.history[0], {"role": "user", "content": "short"}]

    model = ContextTooLong(limit=200)
    events: list[Event] = []
    loop = AgentLoop(model=model, toolbox=toolbox, hooks=Hooks(before_request=[compact]), events=EventBus(events.append))
    outcome = loop.run([dict(SYSTEM), {"role": "user", "content": "x" * 500}])
    assert outcome.status == "answered" and outcome.final_text == "fits now"
    assert errors == ["this model's maximum context length is exceeded"]

    without_help = AgentLoop(model=ContextTooLong(limit=200), toolbox=toolbox)
    failed = without_help.run([dict(SYSTEM), {"role": "user", "content": "x" * 500}])
    assert failed.status == "error" and "maximum context length" in (failed.error or "")

    def useless(info: RequestInfo) -> list[dict[str, Any]] | None:
        return None if info.error is None else [info.history[0], {"role": "user", "content": "y" * 500}]

    still_long = AgentLoop(model=ContextTooLong(limit=200), toolbox=toolbox, hooks=Hooks(before_request=[useless]))
    failed = still_long.run([dict(SYSTEM), {"role": "user", "content": "x" * 500}])
    assert failed.status == "error" and (failed.error or "").endswith("(even after compacting the history once)")


def test_a_before_request_hook_may_stop_the_run_and_after_run_adds_totals(toolbox: Any) -> None:
    def budget(info: RequestInfo) -> None:
        if info.step == 2:
            raise StopRun("out of budget", status="max_cost")

    def totals(outcome: Any) -> dict[str, Any]:
        return {"steps_seen": outcome.steps, "status_seen": outcome.status}

    model = ScriptedModel([tool_calls(call("echo", {"text": "a"})), text("never sent")])
    outcome, events = run(model, toolbox, Hooks(before_request=[budget], after_run=[totals]))
    assert outcome.status == "max_cost" and outcome.error == "out of budget"
    assert len(model.requests) == 1 and outcome.messages[-1]["role"] == "tool"
    assert outcome.totals == {"steps_seen": 1, "status_seen": "max_cost"}
    final = events[-1].to_json()
    assert final["type"] == "final" and final["status"] == "max_cost" and final["totals"] == outcome.totals


def test_history_events_carry_each_message_exactly_as_sent(toolbox: Any) -> None:
    raw = '{"text":   "spaced"}'  # odd spacing: the event must keep the model's own bytes
    model = ScriptedModel([tool_calls(call("echo", raw)), text("done")])
    outcome, events = run(model, toolbox, Hooks())

    appended = [e for e in events if e.type == "history_append"]
    assert [e.message["role"] for e in appended] == ["assistant", "tool", "assistant"]
    assert [e.index for e in appended] == [2, 3, 4]
    assert appended[0].message["tool_calls"][0]["function"]["arguments"] == raw
    rebuilt = [dict(SYSTEM), {"role": "user", "content": "go"}, *(json.loads(json.dumps(e.message)) for e in appended)]
    assert rebuilt == outcome.messages


def test_every_sink_gets_every_event(toolbox: Any) -> None:
    second: list[Event] = []
    model = ScriptedModel([tool_calls(call("echo", {"text": "a"})), text("done")])
    _, first = run(model, toolbox, Hooks(), second.append)
    assert first == second and [e.type for e in first][-1] == "final"


def test_step_limit_message_agrees_in_number(toolbox: Any) -> None:
    model = ScriptedModel([tool_calls(call("echo", {"text": "a"}))])
    outcome, _ = run(model, toolbox, Hooks(), max_steps=1)
    assert outcome.status == "max_steps"
    assert (outcome.error or "").startswith("Stopped after 1 step without a final answer")
    assert "nami run" not in (outcome.error or "")  # the loop names no command: how to go on is the CLI's


def test_an_after_answer_hook_sends_a_message_back_and_the_run_goes_on(toolbox: Any) -> None:
    seen: list[str | None] = []

    def review(answer: str | None) -> str | None:
        seen.append(answer)
        return "say it in one word" if len(seen) == 1 else None

    model = ScriptedModel([text("a long answer"), text("short")])
    outcome, events = run(model, toolbox, Hooks(after_answer=[review]))
    assert outcome.status == "answered" and outcome.final_text == "short"
    assert seen == ["a long answer", "short"]
    assert outcome.steps == 2  # the answer sent back costs a request, counted as a step
    assert model.requests[1]["messages"][-2:] == [{"role": "assistant", "content": "a long answer"},
                                                  {"role": "user", "content": "say it in one word"}]
    assert "answer" not in of_type(events, "final")[0]  # no hook read the answer as a value


def test_an_after_answer_hook_that_sends_back_forever_meets_max_steps(toolbox: Any) -> None:
    model = ScriptedModel([text("no"), text("no"), text("no")])
    outcome, _ = run(model, toolbox, Hooks(after_answer=[lambda answer: "again"]), max_steps=2)
    assert outcome.status == "max_steps" and len(model.requests) == 2


def test_an_after_answer_hook_may_refuse_the_answer_for_good(toolbox: Any) -> None:
    def refuse(answer: str | None) -> str | None:
        raise StopRun("never what was asked", "invalid_answer")

    model = ScriptedModel([text("whatever")])
    outcome, events = run(model, toolbox, Hooks(after_answer=[refuse]))
    assert (outcome.status, outcome.error, outcome.final_text) == ("invalid_answer", "never what was asked", "whatever")
    final = of_type(events, "final")[0]
    assert final["status"] == "invalid_answer" and final["text"] == "whatever"


def test_an_after_run_hook_puts_a_value_in_the_final_event(toolbox: Any) -> None:
    def read(outcome: Any) -> None:
        outcome.answer, outcome.structured = json.loads(outcome.final_text), True

    model = ScriptedModel([text('{"ok": true}')])
    outcome, events = run(model, toolbox, Hooks(after_run=[read]))
    assert outcome.answer == {"ok": True}
    assert of_type(events, "final")[0]["answer"] == {"ok": True}


def test_calls_run_off_the_loop_thread_on_threads_that_wait_for_the_next_call(toolbox: Any) -> None:
    """Starting a thread per call cost more than handing the call to one that waits: one call after another
    needs no new thread, four reads at once get four, and none runs on the loop's own thread."""
    import threading

    from nami_yaml.agent import tool_phase
    from nami_yaml.result import ToolResult

    seen: list[tuple[threading.Thread, str]] = []
    toolbox.add("where", "read", {"n": {"type": "integer"}},
                lambda box, args: seen.append((threading.current_thread(), threading.current_thread().name))
                or ToolResult("here"))
    one_by_one = [tool_calls(call("where", {"n": n})) for n in range(6)]
    model = ScriptedModel([*one_by_one, tool_calls(*(call("sleep_read", {"seconds": 0.3, "label": f"r{n}"})
                                                     for n in range(4))), text("done")])
    before = tool_phase._WORKERS.started
    outcome, _ = run(model, toolbox, Hooks())
    assert outcome.status == "answered" and len(seen) == 6
    assert threading.main_thread() not in {t for t, _ in seen} and {name for _, name in seen} == {"nami-tool-where"}
    overlapping = sorted(toolbox.intervals, key=lambda i: i[1])
    assert len(overlapping) == 4 and max(i[1] for i in overlapping) < min(i[2] for i in overlapping)  # side by side
    assert tool_phase._WORKERS.started - before <= 4  # the first call's thread served the other five
