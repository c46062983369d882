"""nami chat's /commands and input, driven through a pipe (the pty tests cover the terminal)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from nami_yaml.app.agent import Agent
from nami_yaml.cli.chat import COMMANDS, Chat
from nami_yaml.cli.render import HumanRenderer
from nami_yaml.testing import FakeOpenAIServer, ScriptedModel, text


def chat(server: FakeOpenAIServer, stdin: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NAMI_BASE_URL=server.base_url, NAMI_MODEL="fake-model", DEEPSEEK_API_KEY="k")
    return subprocess.run([sys.executable, "-m", "nami_yaml", "chat"], cwd=cwd, env=env, input=stdin,
                          capture_output=True, text=True, timeout=60)


def test_model_switches_the_model_of_the_next_requests(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(text("one"), text("two"))
    result = chat(fake_openai, "first\n/model\n/model other-model\nsecond\n", workdir)
    assert result.returncode == 0, result.stderr
    assert [r["model"] for r in fake_openai.requests] == ["fake-model", "other-model"]
    assert "model: fake-model (/model NAME to change it)" in result.stderr
    assert "model: other-model from the next message on" in result.stderr
    second = fake_openai.requests[1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]  # the conversation goes on


def test_save_says_where_the_session_is_and_exports_it(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(text("Saved <b>soon</b>."))
    result = chat(fake_openai, "/save\nhello\n/save review.html\n", workdir)
    assert result.returncode == 0, result.stderr
    assert "nothing to save yet" in result.stderr
    assert "is saved as it goes" in result.stderr and "nami chat --resume " in result.stderr
    page = (workdir / "review.html").read_text()
    assert "hello" in page and "Saved &lt;b&gt;soon&lt;/b&gt;." in page


def test_unknown_commands_are_answered_with_the_list(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    result = chat(fake_openai, "/frobnicate now\n/help\n", workdir)
    assert result.returncode == 0 and fake_openai.requests == []
    assert f"unknown command /frobnicate; commands: {' '.join(COMMANDS)}" in result.stderr
    assert all(name in result.stdout for name in COMMANDS) and "Alt-Enter" in result.stdout


def test_a_trailing_backslash_continues_the_message(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(text("ok"))
    result = chat(fake_openai, "line one \\\nline two\n/exit\nnever sent\n", workdir)
    assert result.returncode == 0, result.stderr
    assert fake_openai.requests[0]["messages"][-1]["content"] == "line one \nline two"
    assert len(fake_openai.requests) == 1


def test_tab_completes_commands_and_tool_names(workdir: Path) -> None:
    agent = Agent.from_config(model="fake-model", client=ScriptedModel([]))
    session = Chat(agent, HumanRenderer())
    try:
        assert list(session.complete("/c", "/c")) == ["/clear", "/cost"]
        assert set(session.complete("/", "/")) == {*COMMANDS, "/quit"}
        assert list(session.complete("read_", "please read_")) == ["read_file"]
        assert list(session.complete("re", "/tools re")) == ["read_file"]
        assert list(session.complete("f", "/model f")) == ["fake-model"]
        assert list(session.complete("", "/save ")) == [] and list(session.complete("", "text ")) == []
    finally:
        session.reader.close()
        agent.close()


def test_a_resumed_chat_recaps_the_last_question_and_answer() -> None:
    from nami_yaml.cli.chat import recap_lines

    long = "why " * 60
    messages = [{"role": "system", "content": "s"},
                {"role": "user", "content": "first"}, {"role": "assistant", "content": "one"},
                {"role": "user", "content": long},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]},
                {"role": "tool", "tool_call_id": "c", "content": "out"},
                {"role": "assistant", "content": "the\nlast   answer"}]
    lines = recap_lines("20240501-101500-ab12", messages, width=20)
    assert lines == ["resuming session 20240501-101500-ab12 (1 earlier turn before the last):",
                     "  you:  why why why why why…",
                     "  nami: the last answer"]
    unanswered = recap_lines("x", messages[:4])
    assert unanswered[0] == "resuming session x (1 earlier turn before the last):"
    assert unanswered[2] == "  nami: (no answer yet)"  # "one" answered the turn before, not this one


def test_the_banner_says_how_many_definitions_go_up_front() -> None:
    from nami_yaml.app.toolset import grouped
    from nami_yaml.cli.chat import tool_count
    from nami_yaml.registry.library import resolve_library
    from nami_yaml.registry.loader import load_tools
    from nami_yaml.registry.registry import Registry

    tools, problems = load_tools(resolve_library(["git", "jq"]))
    assert problems == [] and len(tools) == 7
    assert tool_count(Registry(grouped(tools), on_demand=frozenset({"git"}))) == "7 tools (1 sent up front; git on demand)"
    assert tool_count(Registry(grouped(tools))) == "7 tools"
