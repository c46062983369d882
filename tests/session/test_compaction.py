"""Compaction: triggered by the threshold and by a provider's context-length error, recent turns kept
verbatim, tool calls never separated from their results, recorded in the session with the full history
still on disk, and a byte-stable prefix between compactions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nami_yaml import Agent
from nami_yaml.session.compaction import ELIDED, SUMMARISER, SUMMARY_PREFIX, turns
from nami_yaml.session.loader import load_session
from nami_yaml.session.store import SessionStore
from nami_yaml.testing import FakeOpenAIServer, ScriptedModel, call, error, text, tool_calls
from tests.helpers import run_nami


def config(workdir: Path, window: int, **compaction: Any) -> None:
    settings = ", ".join(f"{k}: {v}" for k, v in compaction.items())
    (workdir / "agent.yaml").write_text(
        f"model: {{provider: custom, name: m, base_url: http://127.0.0.1:9/v1, context_window: {window}}}\n"
        f"tools: {{builtin: [read_file]}}\ncompaction: {{{settings}}}\n")


def test_turns_keep_each_call_with_its_results() -> None:
    history = [{"role": "user", "content": "u"},
               {"role": "assistant", "content": None, "tool_calls": [{"id": "a"}, {"id": "b"}]},
               {"role": "tool", "tool_call_id": "a"}, {"role": "tool", "tool_call_id": "b"},
               {"role": "assistant", "content": "done"}, {"role": "user", "content": "next"}]
    assert [len(group) for group in turns(history)] == [1, 3, 1, 1]


def test_the_threshold_summarises_older_turns_and_keeps_recent_ones_verbatim(workdir: Path) -> None:
    # A 3,000-token window compacts above 2,400 tokens: the third task pushes the history over it.
    config(workdir, 3000, keep_recent=700, reserve=500)
    tasks = [f"task {n}: " + f"{n}" * 3000 for n in (1, 2, 3)]
    model = ScriptedModel([text("answer 1"), text("answer 2"), text("The user asked for tasks 1 and 2; done."),
                           text("answer 3"), text("answer 4")])
    with Agent.from_config("agent.yaml", client=model) as agent:
        writer = agent.record_session()
        for task in tasks:
            agent.run(task)
        before = [dict(m) for m in agent.messages]
        fourth = agent.run("task 4")

    summary_request = model.requests[2]
    assert summary_request["messages"][0] == {"role": "system", "content": SUMMARISER} and "tools" not in summary_request
    assert "task 1: 111" in summary_request["messages"][1]["content"]
    compacted = model.requests[3]["messages"]
    assert [m["role"] for m in compacted] == ["system", "user", "user"]
    assert compacted[1]["content"].startswith(f"{SUMMARY_PREFIX}\nThe user asked for tasks 1 and 2; done.")
    assert "The user's last request before this point, verbatim:\ntask 2: 222" in compacted[1]["content"]
    assert compacted[2] == {"role": "user", "content": tasks[2]}  # the recent turn, verbatim
    # Between compactions the prefix is byte-stable: the next request starts with the last one.
    assert model.requests[4]["messages"][:len(compacted)] == compacted
    assert before[:len(compacted)] == compacted and fourth.status == "answered"
    assert fourth.totals["requests"] == 1 and agent.meter.session.requests == 5 and agent.meter.session.steps == 4

    records = [json.loads(line) for line in writer.path.read_text().splitlines()]
    [compaction] = [r for r in records if r["type"] == "compaction"]
    assert compaction["trigger"] == "threshold" and compaction["stage"] == "summary"
    assert compaction["summarised"] == 4 and compaction["kept"] == 1
    assert compaction["tokens_after"] < compaction["tokens_before"]
    assert [r["kind"] for r in records if r["type"] == "usage"] == ["step", "step", "compaction", "step", "step"]
    session = load_session(writer.path)
    assert session.messages == agent.messages  # rebuilt after the compaction
    assert any(r.get("message", {}).get("content") == tasks[0] for r in session.records)  # full history on disk


def test_large_old_results_are_elided_in_one_step_without_a_summary(workdir: Path) -> None:
    (workdir / "big.txt").write_text("line of the big file\n" * 300)  # ~9,000 characters as read_file shows it
    config(workdir, 4000, keep_recent=500, reserve=500)  # compacts above 3,200 tokens
    model = ScriptedModel([tool_calls(call("read_file", {"path": "big.txt"}, id="r1")), text("read it"),
                           text("second answer")])
    agent = Agent.from_config("agent.yaml", client=model)
    agent.run("read big.txt")
    agent.run("and now? " + "z" * 3000)
    assert len(model.requests) == 3  # no summary request
    sent = model.requests[2]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant", "user"]
    full = model.requests[1]["messages"][3]["content"]
    assert sent[3] == {"role": "tool", "tool_call_id": "r1", "content": ELIDED.format(chars=len(full))}
    assert sent[:3] == model.requests[1]["messages"][:3]  # everything else as it was
    assert sent[5]["content"].startswith("and now? zzz")


def test_nothing_older_than_the_last_turn_means_no_compaction(workdir: Path) -> None:
    config(workdir, 1000, reserve=100)
    model = ScriptedModel([text("ok")])
    outcome = Agent.from_config("agent.yaml", client=model).run("x" * 8000)
    assert outcome.status == "answered" and len(model.requests) == 1


def test_disabled_compaction_sends_the_history_as_it_is(workdir: Path) -> None:
    config(workdir, 3000, enabled="false")
    model = ScriptedModel([text("a"), text("b")])
    agent = Agent.from_config("agent.yaml", client=model)
    agent.run("1" * 6000)
    agent.run("2" * 6000)
    assert len(model.requests) == 2 and len(model.requests[1]["messages"]) == 4


def test_a_context_length_error_compacts_once_and_retries(workdir: Path) -> None:
    too_long = error(400, "This model's maximum context length is 65536 tokens. However, you requested 70000 "
                          "tokens (69000 in the messages, 1000 in the completion). Please reduce the length of "
                          "the messages or completion.")  # DeepSeek's wording
    with FakeOpenAIServer([text("first answer"), too_long, text("Summary: the user said hello."),
                           text("second answer")]) as server:
        result = run_nami(server, "chat", cwd=workdir, stdin="hello\nwhat now?\n")
    assert result.returncode == 0, result.stderr
    assert "second answer" in result.stdout and "error" not in result.stderr
    assert server.requests[2]["messages"][0]["content"] == SUMMARISER
    retried = server.requests[3]["messages"]
    assert [m["role"] for m in retried] == ["system", "user", "user"]
    assert retried[1]["content"].startswith(SUMMARY_PREFIX) and retried[2]["content"] == "what now?"
    assert retried[0] == server.requests[1]["messages"][0]
    [session_id] = SessionStore().ids()
    records = [json.loads(line) for line in SessionStore().path(session_id).read_text().splitlines()]
    [compaction] = [r for r in records if r["type"] == "compaction"]
    assert compaction["trigger"] == "context_length" and compaction["stage"] == "summary"


def test_when_compaction_cannot_help_the_run_fails_clearly(workdir: Path) -> None:
    too_long = error(400, "the request exceeds the available context size, try increasing it",
                     type="exceed_context_size_error")  # llama.cpp's
    with FakeOpenAIServer([too_long]) as server:
        result = run_nami(server, "run", "x" * 5000, cwd=workdir)
    assert result.returncode == 1
    assert "the request has ~" in result.stderr and "takes (400): raise it (llama-server -c N" in result.stderr
    assert "Traceback" not in result.stderr and len(server.requests) == 1


def test_the_window_a_server_tells_is_kept_to(workdir: Path) -> None:
    # No model.context_window (a local server): its refusal says 2,048, and compaction keeps to it from then on.
    with FakeOpenAIServer([text("first"), text("Summary: a lot of a."), text("second")], context_size=2048) as server:
        (workdir / "agent.yaml").write_text(f"model: {{provider: custom, name: m, base_url: '{server.base_url}'}}\n"
                                            "tools: {builtin: []}\n")
        agent = Agent.from_config("agent.yaml")
        assert agent.compactor.context_window is None
        agent.run("a" * 3000)
        outcome = agent.run("b" * 5000)  # with the first turn, more than 2,048 tokens as the fake counts
    assert outcome.status == "answered" and outcome.final_text == "second"
    assert agent.compactor.context_window == 2048


def test_a_failed_summary_drops_the_old_turns_and_says_so(workdir: Path) -> None:
    config(workdir, 3000, keep_recent=700, reserve=500)
    model = ScriptedModel([text("a"), text("b"), error(500, "overloaded"), text("c")])
    agent = Agent.from_config("agent.yaml", client=model)
    for n in (1, 2, 3):
        outcome = agent.run(f"{n}" * 3000)
    assert outcome.status == "answered" and outcome.final_text == "c"
    note = model.requests[3]["messages"][1]["content"]
    assert note.startswith(f"{SUMMARY_PREFIX}\n(nami could not summarise the 4 earlier messages: ")
    assert "They were dropped" in note and "verbatim:\n" + "2" * 1000 in note


def test_a_long_run_compacts_mid_task_without_separating_calls_from_results(workdir: Path) -> None:
    (workdir / "part.txt").write_text("a line of the part file\n" * 50)  # ~1,600 characters read: not elided
    config(workdir, 3000, keep_recent=900, reserve=500)
    reads = [tool_calls(call("read_file", {"path": "part.txt"}, id=f"c{n}a"),
                        call("read_file", {"path": "part.txt"}, id=f"c{n}b")) for n in range(6)]
    model = ScriptedModel([*reads, text("Summary: read part.txt several times."), text("done")])
    appended: list[dict[str, Any]] = []

    def record(event: Any) -> None:
        if event.type == "history_append":
            appended.append(json.loads(json.dumps(event.message)))

    outcome = Agent.from_config("agent.yaml", client=model, on_event=record).run("read part.txt six times")
    # The scripted model is strict: a request with a call and no result, or a stray result, is refused.
    assert outcome.status == "answered" and outcome.final_text == "done"
    summary_at = next(i for i, r in enumerate(model.requests) if r["messages"][0]["content"] == SUMMARISER)
    after = model.requests[summary_at + 1]["messages"]
    assert after[1]["content"].startswith(SUMMARY_PREFIX)
    assert "The user's last request before this point, verbatim:\nread part.txt six times" in after[1]["content"]
    kept = after[2:]
    assert kept[0]["role"] == "assistant" and [m["role"] for m in kept[1:3]] == ["tool", "tool"]
    assert [m["tool_call_id"] for m in kept[1:3]] == [c["id"] for c in kept[0]["tool_calls"]]
    start = appended.index(kept[0])
    assert appended[start:start + len(kept)] == kept  # verbatim, in order
