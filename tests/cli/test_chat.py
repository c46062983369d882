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
