"""agent.yaml ``mcp_servers:`` through the loop: a nami agent using the fixture server's tools against the
fake model server and the real openai SDK, with the policy, the audit log and dry run; a server that does
not start or crashes mid-run; ``nami tools list``; and no server left behind after Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.programs import need_mcp

need_mcp()

from nami_yaml import Agent  # noqa: E402
from nami_yaml.agent.events import Event  # noqa: E402
from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls  # noqa: E402
from tests.mcp.helpers import FIXTURE, HOST_PIDS, NAMI, alive, audit_lines, gone, server_pid, wait_for_text  # noqa: E402


def write_config(workdir: Path, *, servers: str = "", rules: str = "") -> Path:
    config = workdir / "agent.yaml"
    config.write_text(
        "tools: {builtin: [read_file]}\n"
        "audit: {path: audit.jsonl}\n"
        "mcp_servers:\n"
        f"  fx:\n    command: {json.dumps(sys.executable)}\n    args: [{json.dumps(str(FIXTURE))}]\n"
        f"{servers}"
        f"{rules}")
    return config


def agent(config: Path, server: FakeOpenAIServer, events: list[Event], **options: object) -> Agent:
    return Agent.from_config(config, base_url=server.base_url, model="fake", on_event=events.append,
                             **options)  # type: ignore[arg-type]


def tool_messages(messages: list[dict[str, object]]) -> list[object]:
    return [m["content"] for m in messages if m["role"] == "tool"]


def test_an_agent_uses_a_servers_tools_through_the_loop(workdir: Path, fake_openai: FakeOpenAIServer) -> None:
    config = write_config(workdir, servers="  broken:\n    command: nami-no-such-server\n",
                          rules="rules:\n  - {tool: fx__shout, decision: allow}\n")
    fake_openai.add(tool_calls(call("fx__echo", {"text": "ping"}), call("fx__shout", {"text": "ping"})),
                    text("pong"))
    events: list[Event] = []
    with agent(config, fake_openai, events) as nami:
        outcome = nami.run("use the tools")
        second = nami.run("again")  # the broken server is not reported twice
    assert outcome.status == "answered" and outcome.final_text == "pong"
    assert tool_messages(outcome.messages) == ["ping", "PING"]
    assert second.status == "error"  # the script ran out; only the events matter here
    names = [tool["function"]["name"] for tool in fake_openai.requests[0]["tools"]]
    assert names[-7:] == ["fx__echo", "fx__shout", "fx__slow", "fx__crash", "fx__big", "fx__show_env", "fx__fail"]
    errors = [e.message for e in events if e.type == "error"]  # type: ignore[union-attr]
    assert len([m for m in errors if m.startswith("MCP server broken")]) == 1
    assert "command not found: nami-no-such-server" in errors[0]
    lines = audit_lines(workdir / "audit.jsonl")
    shout = next(line for line in lines if line["tool"] == "fx__shout")
    assert shout["decided_by"] == "rule agent.yaml:10:5" and shout["status"] == "ran"
    assert shout["plan"] == {"kind": "mcp", "mcp_server": "fx", "mcp_tool": "shout",
                             "endpoint": f"{sys.executable} {FIXTURE}", "timeout": 120.0}


def test_the_policy_decides_a_servers_tools_like_any_other(workdir: Path, fake_openai: FakeOpenAIServer) -> None:
    config = write_config(workdir, rules="rules:\n  - {tool: 'fx__s*', args: {text: {regex: secret}}, "
                                         "decision: deny, reason: no secrets}\n")
    fake_openai.add(tool_calls(call("fx__shout", {"text": "a secret"}), call("fx__fail", {})), text("ok"))
    events: list[Event] = []
    with agent(config, fake_openai, events) as nami:
        outcome = nami.run("go")
    denied, asked = tool_messages(outcome.messages)
    assert "Denied by rule agent.yaml:8:5" in denied and "no secrets" in denied  # type: ignore[operator]
    assert "Denied by no approver" in asked and "permissions.exec" in asked  # type: ignore[operator]


def test_dry_run_runs_no_server_tool(workdir: Path, fake_openai: FakeOpenAIServer) -> None:
    config = write_config(workdir)
    fake_openai.add(tool_calls(call("fx__shout", {"text": "x"})), text("ok"))
    with agent(config, fake_openai, [], dry_run=True) as nami:
        outcome = nami.run("go")
    assert tool_messages(outcome.messages) == ['dry run: not executed. It would run: fx__shout text="x"']


def test_a_server_that_crashes_mid_run_is_reported_once_and_the_agent_goes_on(
        workdir: Path, fake_openai: FakeOpenAIServer) -> None:
    config = write_config(workdir)
    fake_openai.add(tool_calls(call("fx__echo", {"text": "before"})), tool_calls(call("fx__crash", {})),
                    tool_calls(call("fx__echo", {"text": "after"})), text("went on without it"))
    events: list[Event] = []
    with agent(config, fake_openai, events, assume_yes=True) as nami:
        outcome = nami.run("crash it")
    before, crashed, after = tool_messages(outcome.messages)
    assert before == "before"
    assert "stopped (exit code 3) during this call" in crashed  # type: ignore[operator]
    assert "MCP server fx is unavailable (stopped (exit code 3))" in after  # type: ignore[operator]
    assert outcome.status == "answered" and outcome.final_text == "went on without it"
    notices = [e.message for e in events if e.type == "error"]  # type: ignore[union-attr]
    assert len(notices) == 1 and notices[0].startswith("MCP server fx stopped (exit code 3)")


def test_tools_list_shows_a_servers_tools_once_trusted(workdir: Path) -> None:
    write_config(workdir)
    untrusted = subprocess.run([*NAMI, "tools", "list"], cwd=workdir, capture_output=True, text=True, timeout=60)
    assert "fx__echo" not in untrusted.stdout
    assert "MCP servers fx not started: this agent.yaml is not trusted yet" in untrusted.stderr
    assert subprocess.run([*NAMI, "trust", "--yes"], cwd=workdir, capture_output=True, timeout=60).returncode == 0
    listed = subprocess.run([*NAMI, "tools", "list"], cwd=workdir, capture_output=True, text=True, timeout=60)
    assert "fx__echo      read   Say the text back.  [MCP server fx]" in listed.stdout, listed.stderr
    rows = json.loads(subprocess.run([*NAMI, "tools", "list", "--json"], cwd=workdir, capture_output=True,
                                     text=True, timeout=60).stdout)
    assert {row["name"]: row.get("server") for row in rows}["fx__shout"] == "fx"
    context = json.loads(subprocess.run([*NAMI, "context", "--json"], cwd=workdir, capture_output=True,
                                        text=True, timeout=60).stdout)
    assert any("fx__echo" in part["label"] for part in context["parts"])  # what each request really sends


def test_without_the_extra_the_servers_are_reported_not_started(workdir: Path, tmp_path: Path) -> None:
    config = write_config(workdir)
    shadow = tmp_path / "shadow" / "mcp"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('hidden for this test')\n")
    env = {**os.environ, "PYTHONPATH": str(shadow.parent)}
    result = subprocess.run([*NAMI, "tools", "list", "-c", str(config)], cwd=workdir, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "read_file" in result.stdout
    assert "MCP servers not started" in result.stderr and "pip install 'nami_yaml[mcp]'" in result.stderr


@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_leaves_no_server_behind(signal_number: int, workdir: Path, fake_openai: FakeOpenAIServer) -> None:
    pid_file, child_file, marker = workdir / "server.pid", workdir / "child.pid", workdir / "slow.pid"
    config = workdir / "agent.yaml"
    config.write_text(
        "tools: {builtin: []}\n"
        "mcp_servers:\n"
        f"  fx:\n    command: {json.dumps(sys.executable)}\n"
        f"    args: {json.dumps([str(FIXTURE), '--pid-file', str(pid_file), '--child-pid-file', str(child_file)])}\n"
        f"    {HOST_PIDS}\n")
    fake_openai.add(tool_calls(call("fx__slow", {"seconds": 120, "marker": str(marker)})), text("never"))
    env = {**os.environ, "NAMI_BASE_URL": fake_openai.base_url, "NAMI_MODEL": "fake"}
    process = subprocess.Popen([*NAMI, "run", "--yes", "--json", "-c", str(config), "wait"], cwd=workdir, env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_text(marker)
        server, child = server_pid(pid_file), int(child_file.read_text())
        process.send_signal(signal_number)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    final = json.loads(stdout.splitlines()[-1])
    assert final["type"] == "final" and final["status"] == "interrupted"
    assert gone(server, timeout=1) and gone(child, timeout=1)  # stopped before nami exited


@pytest.mark.parametrize("how", ["answered", "error"])
def test_a_finished_run_stops_its_servers(how: str, workdir: Path, fake_openai: FakeOpenAIServer) -> None:
    pid_file = workdir / "server.pid"
    config = workdir / "agent.yaml"
    config.write_text(f"mcp_servers:\n  fx:\n    command: {json.dumps(sys.executable)}\n"
                      f"    args: {json.dumps([str(FIXTURE), '--pid-file', str(pid_file)])}\n    {HOST_PIDS}\n")
    if how == "answered":
        fake_openai.add(text("done"))
    env = {**os.environ, "NAMI_BASE_URL": fake_openai.base_url, "NAMI_MODEL": "fake"}
    result = subprocess.run([*NAMI, "run", "-c", str(config), "hi"], cwd=workdir, env=env, stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == (0 if how == "answered" else 1), result.stderr
    assert gone(server_pid(pid_file), timeout=1)


def test_two_servers_making_the_same_tool_name_keep_the_first(workdir: Path) -> None:
    # fx_ + __ + echo and fx + __ + _echo are both fx___echo: the second is left out, with a notice.
    fixture = f"command: {json.dumps(sys.executable)}\n    args: [{json.dumps(str(FIXTURE))}, --tool-names"
    config = workdir / "agent.yaml"
    config.write_text(f"tools: {{builtin: []}}\nmcp_servers:\n  fx_:\n    {fixture}, echo]\n"
                      f"  fx:\n    {fixture}, _echo]\n")
    assert subprocess.run([*NAMI, "trust", "--yes"], cwd=workdir, capture_output=True, timeout=60).returncode == 0
    listed = subprocess.run([*NAMI, "tools", "list"], cwd=workdir, capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr
    assert listed.stdout.count("fx___echo") == 1 and "[MCP server fx_]" in listed.stdout
    assert "MCP tool fx___echo left out: a tool of that name is already loaded" in listed.stderr


def test_two_projects_servers_of_one_name_keep_separate_logs(tmp_path: Path) -> None:
    """A failure notice shows the log's last lines: with one log per server name, two projects running at
    once would show each other's server output."""
    from nami_yaml.app import open_project

    logs = {}
    for project in ("alpha", "beta"):
        folder = tmp_path / project
        folder.mkdir()
        crash = f"import sys; sys.stderr.write('{project}-was-here\\n'); sys.exit(3)"
        (folder / "agent.yaml").write_text(
            f"mcp_servers:\n  github: {{command: {json.dumps(sys.executable)}, args: [-c, {json.dumps(crash)}]}}\n")
        with open_project(folder / "agent.yaml", cwd=folder, tool_servers=True) as opened:
            assert f"{project}-was-here" in " ".join(opened.take_notices())
        logs[project] = [p for p in (tmp_path / "home").rglob("github.log") if project in p.read_text()]
    assert len(logs["alpha"]) == len(logs["beta"]) == 1 and logs["alpha"] != logs["beta"]
    assert "beta-was-here" not in logs["alpha"][0].read_text()


def test_recording_a_session_leaves_the_servers_running(workdir: Path, fake_openai: FakeOpenAIServer) -> None:
    """Agent.from_config(...).record_session() as docs/python-api.md shows it: the servers it started stay."""
    pid_file = workdir / "server.pid"
    config = workdir / "agent.yaml"
    config.write_text("tools: {builtin: []}\nmcp_servers:\n  fx:\n"
                      f"    command: {json.dumps(sys.executable)}\n"
                      f"    args: {json.dumps([str(FIXTURE), '--pid-file', str(pid_file)])}\n    {HOST_PIDS}\n")
    fake_openai.add(tool_calls(call("fx__echo", {"text": "after recording"})), text("done"))
    events: list[Event] = []
    with agent(config, fake_openai, events) as nami:
        pid = server_pid(pid_file)
        first = nami.record_session()
        second = nami.record_session()  # a second recording replaces the first, servers still untouched
        outcome = nami.run("echo")
        assert alive(pid)
    assert tool_messages(outcome.messages) == ["after recording"]
    assert first.path != second.path and second.path.exists() and not first.path.exists()
    assert gone(pid)  # the agent that opened the project stops them when it closes


def test_a_servers_tools_can_wait_until_the_model_loads_them(workdir: Path, fake_openai: FakeOpenAIServer) -> None:
    config = write_config(workdir)
    config.write_text(config.read_text().replace("tools: {builtin: [read_file]}", "tools: {builtin: [read_file], on_demand: true}"))
    fake_openai.add(tool_calls(call("load_tools", {"groups": ["fx"]})), tool_calls(call("fx__echo", {"text": "hi"})),
                    text("done"))
    events: list[Event] = []
    with agent(config, fake_openai, events) as nami:
        outcome = nami.run("use the server")
    first, second = ([t["function"]["name"] for t in body["tools"]] for body in fake_openai.requests[:2])
    assert first == ["read_file", "tool_docs", "load_tools"] and "fx: fx__{echo,shout" in \
        fake_openai.requests[0]["tools"][2]["function"]["description"]
    assert second[:3] == first and second[3:5] == ["fx__echo", "fx__shout"]
    assert tool_messages(outcome.messages)[-1] == "hi"


def test_hostile_tool_names_and_descriptions_reach_no_terminal_live(workdir: Path) -> None:
    """A server's tool names and descriptions are its own text: escape codes (OSC 52 writes the clipboard),
    newlines that would print a fake row, bidi overrides and huge names are shown escaped, one row each."""
    names = ["a\x1b[2Jb", "c\nd", "e\u202ef", "x" * 5000]
    about = "\x1b]52;c;ZXZpbA==\x07first\nFAKE ROW  read  x"
    config = workdir / "agent.yaml"
    config.write_text("tools: {builtin: []}\nmcp_servers:\n  fx: " + json.dumps(
        {"command": sys.executable, "args": [str(FIXTURE), "--tool-names", ",".join(names), "--description", about]})
        + "\n")
    assert subprocess.run([*NAMI, "trust", "--yes"], cwd=workdir, capture_output=True, timeout=60).returncode == 0
    listed = subprocess.run([*NAMI, "tools", "list"], cwd=workdir, capture_output=True, text=True, timeout=60)
    rows = listed.stdout.splitlines()
    assert len(rows) == 4 and all(row.startswith("fx__") for row in rows), listed.stdout
    assert all(len(row.split()[0]) <= 64 for row in rows)  # a huge name is cut, with a hash
    shown = subprocess.run([*NAMI, "tools", "show", rows[0].split()[0]], cwd=workdir, capture_output=True, text=True,
                           timeout=60)
    for output in (listed.stdout, listed.stderr, shown.stdout, shown.stderr):
        assert not {"\x1b", "\x07", "\u202e"} & set(output), output
    assert "\\x1b]52" in listed.stdout and "\\x1b]52" in shown.stdout
